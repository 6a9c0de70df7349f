/**
 * The request-reconstruction invariant: every request the loop sends must be
 * derivable from the log as it stands at send time.
 *
 * @module
 */

import { HarnessError } from "../kernel/harness_error.ts";
import type { GenerateOptions } from "../llm/llm_adapter.ts";
import { deriveEventMessage, type EpochHeader, foldSurface, type SessionEvent } from "../session/mod.ts";

function isDeepFrozen(value: unknown): boolean {
  if (typeof value !== "object" || value === null) return true;
  if (!Object.isFrozen(value)) return false;
  return Object.values(value).every(isDeepFrozen);
}

function same(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/**
 * Check that `request` equals what the log derives: messages through an
 * independent full surface fold, and config, system prompt and tools from the
 * last `request/header`. The request must be deep-frozen.
 *
 * @param events The log at send time.
 * @param request The request about to be sent.
 * @throws {HarnessError} `INVARIANT_REQUEST_RECONSTRUCTION` naming the first difference.
 */
export function checkRequestReconstruction(events: readonly SessionEvent[], request: GenerateOptions): void {
  const fail = (what: string) => {
    throw new HarnessError(
      "INVARIANT_REQUEST_RECONSTRUCTION",
      `Request differs from the log's derivation: ${what}`,
      { details: { seq: events.length } },
    );
  };
  if (!isDeepFrozen(request)) fail("the request is not deep-frozen");
  const bySeq = events;
  const derived = foldSurface(events).nodes.map((seq) => deriveEventMessage(bySeq[seq])).filter((m) => m !== null);
  if (!same(derived, request.messages)) fail("messages");
  let header: EpochHeader | undefined;
  for (const event of events) if (event.type === "request/header") header = event.data.header;
  if (header === undefined) return fail("no request/header precedes the request");
  if (!same(header.config, request.config)) fail("config");
  if ((header.system ?? undefined) !== (request.system ?? undefined)) fail("system prompt");
  if (!same(header.tools ?? [], request.tools ?? [])) fail("tools");
}
