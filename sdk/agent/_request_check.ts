/**
 * The request-reconstruction invariant: every request the loop sends must be
 * derivable from the log as it stands at send time.
 *
 * @module
 */

import { HarnessError } from "../kernel/harness_error.ts";
import { callConfigOf, type GenerateOptions, type Message } from "../llm/mod.ts";
import {
  canonicalHeader,
  deriveEventMessage,
  type EpochHeader,
  headerEquals,
  type Session,
  SurfaceManager,
} from "../session/mod.ts";

// The call fields of the request are the header config's own values (the
// header comparison looks at these six fields of the config only).
function sameConfig(request: GenerateOptions, config: EpochHeader["config"]): boolean {
  return request.provider === config.provider && request.model === config.model &&
    request.reasoningEffort === config.reasoningEffort && request.temperature === config.temperature &&
    request.maxTokens === config.maxTokens && request.stop === config.stop;
}

/**
 * Checks each request against its own fold of the log, kept incrementally:
 * a separate `SurfaceManager` fed with the events appended since the last
 * check, its derived messages extended by the new nodes (rebuilt after a
 * replace), and the last `request/header` tracked as it goes. A check costs
 * O(new events) to fold plus O(history) pointer comparisons, instead of a full
 * fold and a JSON comparison of the whole history per request.
 *
 * The messages of a request must be the log's own message objects (the log
 * deep-freezes them on append), in the derived order; the request must be
 * frozen (its messages array is its own copy, see `GenerateOptions.messages`); config, system prompt and tools must equal the
 * last `request/header`.
 */
export class RequestChecker {
  readonly #session: Session;
  readonly #surface = new SurfaceManager();
  #fed = 0;
  #derived: Message[] = [];
  #derivedNodes = 0;
  #generation = 0;
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
    const fail = (what: string): never => {
      throw new HarnessError("INVARIANT_REQUEST_RECONSTRUCTION", `Request differs from the log's derivation: ${what}`, {
        details: { seq },
      });
    };
    for (let i = this.#fed; i < seq; i++) {
      const event = this.#session.at(i)!;
      this.#surface.commit(event);
      if (event.type === "request/header") this.#header = event.data.header;
    }
    this.#fed = seq;
    if (this.#surface.replaceGeneration !== this.#generation) {
      this.#generation = this.#surface.replaceGeneration;
      this.#derived = [];
      this.#derivedNodes = 0;
    }
    for (let i = this.#derivedNodes; i < this.#surface.size; i++) {
      const message = deriveEventMessage(this.#session.at(this.#surface.nodeAt(i)!)!);
      if (message !== null) this.#derived.push(message);
    }
    this.#derivedNodes = this.#surface.size;

    if (!Object.isFrozen(request)) fail("the request is not frozen");
    const messages = request.messages;
    const derived = this.#derived;
    const length = derived.length;
    if (messages.length !== length) fail(`messages: ${messages.length} sent, ${length} derived`);
    for (let i = 0; i < length; i++) {
      if (messages[i] !== derived[i]) fail(`message ${i} is not the log's message`);
    }
    const header = this.#header;
    if (header === undefined) return fail("no request/header precedes the request");
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
        header.system !== sent.system
          ? "system prompt"
          : !headerEquals({ config: header.config }, { config: sent.config })
          ? "config"
          : "tools",
      );
    }
  }
}
