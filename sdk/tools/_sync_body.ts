// Internal: the body of a `defineTool()` definition in its synchronous form.
//
// A definition's `execute` is async (its contract returns a promise), so a
// tool whose own body is synchronous would still cost the pipeline a promise
// chain, an abort listener and a race per call. `defineTool()` records here
// the same body without the async wrapper: it returns the tool's value as it
// is (or the tool's own promise, or a promise while the JSON Schema validator
// loads) and throws what the wrapper would reject with. The pipeline uses it
// only while the definition's `execute` is still the one it was made with.

import type { ToolRunContext } from "./tool_definition.ts";

/** A synchronous body and the `execute` it stands for. */
export interface SyncBody {
  /** The definition's `execute` when the body was recorded. */
  readonly execute: unknown;
  /** The body: a value, a promise, or a throw. */
  readonly run: (args: unknown, exec: ToolRunContext) => unknown;
}

/** The synchronous bodies of definitions made by `defineTool()`. */
export const syncBodies: WeakMap<object, SyncBody> = new WeakMap();
