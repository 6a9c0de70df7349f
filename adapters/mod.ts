/**
 * `@dsh/harness/adapters`: provider adapters implementing the core's
 * `LlmAdapter` contract — DeepSeek, and any OpenAI-compatible chat
 * completions endpoint.
 *
 * @example Streaming through DeepSeek
 * ```ts ignore
 * import { createKernel, type LlmEvents, llmRuntimePlugin, type LlmServices } from "@dsh/harness";
 * import { deepseekAdapter } from "@dsh/harness/adapters";
 *
 * const ctx = createKernel<LlmEvents, LlmServices>();
 * await ctx.plugin(llmRuntimePlugin).ready;
 * ctx.llm!.registerAdapter(deepseekAdapter({ apiKey: process.env.DEEPSEEK_API_KEY }));
 * ```
 *
 * @module
 */

export {
  DEEPSEEK_MODELS,
  DEEPSEEK_REASONING_EFFORTS,
  deepseekAdapter,
  type DeepSeekAdapterOptions,
} from "./deepseek_adapter.ts";
export {
  openaiCompatibleAdapter,
  type OpenAiCompatibleAdapterOptions,
  type ReasoningTokenAccounting,
} from "./openai_compatible_adapter.ts";
export { adapterKinds } from "./adapter_kinds.ts";
