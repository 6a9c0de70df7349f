// Internal: the system prompt's plain helpers — the scope chain of an assembly, the order of parts, the abort
// check, and two small tests of values (moved out of `system_prompt.ts`). None of them touches the registry.

import type { ScopeInfo } from "../kernel/harness_context.ts";
import { HarnessError } from "../kernel/harness_error.ts";
import type { AssembleContext, PromptPart } from "./prompt_contributions.ts";

export function chainOf(scope: ScopeInfo | undefined): (ScopeInfo | undefined)[] {
  const chain: (ScopeInfo | undefined)[] = [];
  for (let s = scope; s !== undefined; s = s.parent) chain.unshift(s);
  chain.unshift(undefined);
  return chain; // farthest (global) first, nearest last
}

export function byOrder(a: PromptPart, b: PromptPart): number {
  return a.order - b.order || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
}

export function checkAborted(context: AssembleContext): void {
  if (context.signal?.aborted) {
    throw new HarnessError("ABORTED", "Prompt assembly was aborted", { cause: context.signal.reason });
  }
}

export function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (typeof value === "object" || typeof value === "function") && value !== null &&
    typeof (value as { then?: unknown }).then === "function";
}

export function sameItems(a: readonly unknown[], b: readonly unknown[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
