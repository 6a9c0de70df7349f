/**
 * The request-reconstruction invariant: every request the loop sends must be
 * derivable from the log as it stands at send time.
 *
 * @module
 */

import { HarnessError } from "../kernel/harness_error.ts";
import { callConfigOf, type GenerateOptions } from "../llm/llm_adapter.ts";
import type { Message } from "../llm/messages.ts";
import { canonicalHeader, headerEquals } from "../session/header_equals.ts";
import { deriveEventMessage } from "../session/derive_event_message.ts";
import type { EpochHeader, SessionEvent } from "../session/session_events.ts";
import { isSurfaceEventType } from "../session/surface_manager.ts";
import type { Session } from "../session/session.ts";

// The call fields of the request are the header config's own values (the
// header comparison looks at these six fields of the config only).
function sameConfig(request: GenerateOptions, config: EpochHeader["config"]): boolean {
  return request.provider === config.provider && request.model === config.model &&
    request.reasoningEffort === config.reasoningEffort && request.temperature === config.temperature &&
    request.maxTokens === config.maxTokens && request.stop === config.stop;
}

/**
 * Checks each request against its own fold of the log, kept incrementally:
 * the surface nodes of the events appended since the last check (appends
 * pushed, a replacement spliced in and the messages derived again), their
 * messages, and the last `request/header`, without reading the session's own
 * surface or derivation. The log's append already validated every surface
 * operation, so the fold only applies them. A check costs O(new events) to
 * fold plus O(history) pointer comparisons of the messages, instead of a full
 * fold and a JSON comparison of the whole history per request.
 *
 * The messages of a request must be the log's own message objects (the log
 * deep-freezes them on append), in the derived order; the request must be
 * frozen (its messages array is its own copy, see `GenerateOptions.messages`); config, system prompt and tools must equal the
 * last `request/header`.
 */
export class RequestChecker {
  readonly #session: Session;
  #fed = 0;
  /** The seqs of the surface nodes, in order. */
  readonly #nodes: number[] = [];
  /** The messages of the nodes (nodes without one left out). */
  #derived: Message[] = [];
  #header: EpochHeader | undefined;

  /**
   * Check the requests of one session.
   *
   * @param session The session whose log the requests must match.
   */
  constructor(session: Session) {
    this.#session = session;
  }

  /**
   * Check one request against the log at this moment.
   *
   * @param request The request about to be sent.
   * @throws {HarnessError} `INVARIANT_REQUEST_RECONSTRUCTION` naming the first difference.
   */
  check(request: GenerateOptions): void {
    const seq = this.#session.seq;
    this.#catchUp(seq);

    if (!Object.isFrozen(request)) fail(seq, "the request is not frozen");
    const messages = request.messages;
    const derived = this.#derived;
    const length = derived.length;
    if (messages.length !== length) fail(seq, `messages: ${messages.length} sent, ${length} derived`);
    const differs = firstDifference(messages, derived, length);
    if (differs >= 0) fail(seq, `message ${differs} is not the log's message`);
    const header = this.#header;
    if (header === undefined) return fail(seq, "no request/header precedes the request");
    // The loop builds its request from the header in force: the same system
    // text, the same tools array and the same config values need no
    // canonical forms and no JSON comparison.
    if (
      request.system === header.system && request.tools === header.tools && sameConfig(request, header.config)
    ) return;
    // The session's own header comparison, on the request's envelope in canonical form.
    const sent = canonicalHeader({
      config: callConfigOf(request),
      adapterDefaults: header.adapterDefaults,
      system: request.system,
      tools: request.tools,
    });
    if (!headerEquals(header, sent)) {
      fail(
        seq,
        header.system !== sent.system
          ? "system prompt"
          : !headerEquals({ config: header.config }, { config: sent.config })
          ? "config"
          : "tools",
      );
    }
  }

  // The fold of the events appended since the last check (a loop in a small method, as firstDifference()).
  #catchUp(seq: number): void {
    const session = this.#session;
    for (let i = this.#fed; i < seq; i++) this.#fold(session.at(i)!, seq);
    this.#fed = seq;
  }

  #fold(event: SessionEvent, seq: number): void {
    const type = event.type;
    if (type === "request/header") {
      this.#header = event.data.header;
      return;
    }
    if (!isSurfaceEventType(type)) return;
    const op = event.surfaceOp!;
    if (op === "append") {
      this.#nodes.push(event.seq);
      const message = deriveEventMessage(event);
      if (message !== null) this.#derived.push(message);
      return;
    }
    // A replacement (compaction, an edited tool result): splice, then derive every node again.
    const nodes = this.#nodes;
    const start = nodes.indexOf(op.start);
    const end = nodes.indexOf(op.end, start);
    if (start < 0 || end < 0) fail(seq, `event ${event.seq} replaces nodes ${op.start}..${op.end}, not on the surface`);
    nodes.splice(start, end - start + 1, event.seq);
    const derived: Message[] = [];
    for (const node of nodes) {
      const message = deriveEventMessage(this.#session.at(node)!);
      if (message !== null) derived.push(message);
    }
    this.#derived = derived;
  }
}

/**
 * The first index below `length` where `a` and `b` hold different values, or -1. A function of its own: this
 * O(history) loop runs twice a turn, and on V8 a small function is optimised long before `check` as a whole is
 * (on Deno, in the peer benchmark's 200 turns, the loop inside `check` cost about three times as much).
 */
function firstDifference(a: readonly unknown[], b: readonly unknown[], length: number): number {
  for (let i = 0; i < length; i++) if (a[i] !== b[i]) return i;
  return -1;
}

function fail(seq: number, what: string): never {
  throw new HarnessError("INVARIANT_REQUEST_RECONSTRUCTION", `Request differs from the log's derivation: ${what}`, {
    details: { seq },
  });
}
