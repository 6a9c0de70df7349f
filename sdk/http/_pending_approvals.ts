// Internal: the tool approvals pending for a session, as the HTTP app reports them (moved out of
// `create_harness_app.ts`).

import type { Agent } from "../agent/agent.ts";
import type { PendingApproval } from "../tools/approval_queue.ts";
import type { HttpPendingApproval } from "./session_summary.ts";

export function toPending(p: PendingApproval): HttpPendingApproval {
  return {
    callId: p.callId,
    toolName: p.toolName,
    args: p.args,
    ...(p.reason !== undefined ? { reason: p.reason } : {}),
  };
}

export function belongsTo(p: PendingApproval, agent: Agent): boolean {
  if (p.sessionId !== undefined) return p.sessionId === agent.id;
  for (let s = p.scope; s !== undefined; s = s.parent) if (s === agent.ctx.scope) return true;
  return false;
}
