// Internal: the tool approvals pending for a session, as the HTTP app reports them (moved out of
// `create_harness_app.ts`).

import type { Agent } from "../agent/agent.ts";
import type { PendingApproval } from "../tools/approval_queue.ts";
import type { HttpPendingApproval } from "./session_summary.ts";

export function toPending(p: PendingApproval, sessionId: string): HttpPendingApproval {
  return {
    sessionId,
    callId: p.callId,
    toolName: p.toolName,
    args: p.args,
    ...(p.reason !== undefined ? { reason: p.reason } : {}),
  };
}

/** Whether the question is `agent`'s own (its session's, or asked in its scope): the one its route answers. */
export function belongsTo(p: PendingApproval, agent: Agent): boolean {
  if (p.sessionId !== undefined) return p.sessionId === agent.id;
  for (let s = p.scope; s !== undefined; s = s.parent) if (s === agent.ctx.scope) return true;
  return false;
}

/**
 * The session a question is for when it is `agent`'s own or a subagent's below it (a live session whose header
 * has `origin: "subagent"`, up a `parentSession` chain that reaches `agent`), else `undefined`.
 */
export function sessionOfQuestion(
  p: PendingApproval,
  agent: Agent,
  live: (id: string) => Agent | undefined,
): string | undefined {
  if (belongsTo(p, agent)) return agent.id;
  if (p.sessionId === undefined) return undefined;
  const seen = new Set<string>();
  for (let id: string | undefined = p.sessionId; id !== undefined && !seen.has(id); id = parentOf(live(id))) {
    if (id === agent.id) return p.sessionId;
    seen.add(id);
  }
  return undefined;
}

function parentOf(agent: Agent | undefined): string | undefined {
  const header = agent?.session.header;
  return header?.origin === "subagent" ? header.parentSession : undefined;
}

/** The questions pending for `agent`'s session and its subagents' sessions, each naming its session. */
export function pendingWithin(
  pending: readonly PendingApproval[],
  agent: Agent,
  live: (id: string) => Agent | undefined,
): HttpPendingApproval[] {
  const out: HttpPendingApproval[] = [];
  for (const p of pending) {
    const sessionId = sessionOfQuestion(p, agent, live);
    if (sessionId !== undefined) out.push(toPending(p, sessionId));
  }
  return out;
}
