// Internal: the decision `tools/pre-execute` ends with when no listener decides.
// A `write` tool asks; everything else runs. The ask is one frozen object, so a
// permission rule that allows the call can tell "nobody decided" (this object,
// passed through, or copied with a rewritten input) from a listener's own ask.

import type { AnyToolDefinition } from "./tool_definition.ts";
import type { PreToolDecision } from "./tool_events.ts";

const DEFAULT_ASK_REASON = "the tool changes files or runs commands, which asks for approval by default";
// The mark of a default decision: a symbol no listener can name, which a spread (`{ ...await next(), input }`) copies.
// A listener's own ask with the same words is not the default.
const DEFAULT = Symbol("default decision");
const ALLOW: PreToolDecision = Object.freeze({ kind: "allow", [DEFAULT]: true });
const DEFAULT_ASK: PreToolDecision = Object.freeze({ kind: "ask", reason: DEFAULT_ASK_REASON, [DEFAULT]: true });

/** The decision for a call no listener decided. */
export function defaultDecision(definition: AnyToolDefinition): PreToolDecision {
  return definition.access === "write" ? DEFAULT_ASK : ALLOW;
}

/**
 * Whether `decision` is the default ask, decided by no listener: the object itself, or a copy that a listener
 * which only rewrote the input passed on (`{ ...await next(), input }`).
 */
export function isDefaultAsk(decision: PreToolDecision): boolean {
  return decision === DEFAULT_ASK ||
    decision.kind === "ask" && decision.reason === DEFAULT_ASK_REASON && markedCopy(decision, "reason");
}

/**
 * Whether `decision` is the default allow of a tool that only reads, decided by no listener (the object, or a copy
 * that only rewrote the input): a listener's own allow is not.
 */
export function isDefaultAllow(decision: PreToolDecision): boolean {
  return decision === ALLOW || decision.kind === "allow" && markedCopy(decision);
}

// A copy of a default decision: it carries the mark, and besides `kind` (and `extra`) at most a rewritten `input`.
function markedCopy(decision: PreToolDecision, extra?: string): boolean {
  if ((decision as { [DEFAULT]?: unknown })[DEFAULT] !== true) return false;
  for (const key of Object.keys(decision)) if (key !== "kind" && key !== extra && key !== "input") return false;
  return true;
}
