/**
 * The kernel events and services of the LLM layer.
 *
 * @module
 */

import type { GenerateOptions } from "./llm_adapter.ts";
import type { LlmRuntime } from "./llm_runtime.ts";
import type { StreamChunk } from "./stream_chunk.ts";

/** Events of the LLM layer, for the kernel's typed event map. */
export interface LlmEvents {
  /**
   * Waterfall around every model call (retry, replay, routing, recording).
   * Call `next()` to reach the adapter's stream, or return your own chunks to
   * short-circuit. Requests built by the loop arrive deep-frozen: read them,
   * never rewrite them. The runtime turns a listener's throw into a terminal
   * `finish` chunk, like an adapter's.
   */
  "llm/stream": (options: GenerateOptions, next: () => AsyncIterable<StreamChunk>) => AsyncIterable<StreamChunk>;
  /** The provider routes changed (an adapter was registered or released); emit mode. */
  "llm/adapters-changed": () => void;
}

/** Services of the LLM layer, for the kernel's typed service map. */
export interface LlmServices {
  /** The model-call runtime: adapter registry and streaming entry point. */
  llm: LlmRuntime;
}
