/**
 * Messages and content blocks: the model-facing history, as the session log
 * stores it and as adapters serialise it.
 *
 * @module
 */

/** Plain text. */
export interface TextBlock {
  readonly type: "text";
  readonly text: string;
}

/** The model's visible reasoning ("thinking"). */
export interface ReasoningBlock {
  readonly type: "reasoning";
  readonly text: string;
}

/** An image, inline as base64 data or by URL. */
export interface ImageBlock {
  readonly type: "image";
  /** IANA media type, e.g. `image/png`. */
  readonly mediaType: string;
  /** Base64 data (exclusive with `url`). */
  readonly data?: string;
  /** A URL the provider can fetch (exclusive with `data`). */
  readonly url?: string;
}

/** A tool call the model made. `arguments` is the raw JSON string as streamed. */
export interface ToolCallBlock {
  readonly type: "tool-call";
  readonly id: string;
  readonly name: string;
  readonly arguments: string;
}

/** The result of a tool call, as the model sees it. */
export interface ToolResultBlock {
  readonly type: "tool-result";
  readonly toolCallId: string;
  readonly content: readonly (TextBlock | ImageBlock)[];
  /** `true` when the tool failed; the content then describes the failure. */
  readonly isError?: boolean;
}

/** Every kind of content block. */
export type ContentBlock = TextBlock | ReasoningBlock | ImageBlock | ToolCallBlock | ToolResultBlock;

/** Where a message came from. */
export type MessageSource =
  | { readonly kind: "user"; readonly form?: string }
  | { readonly kind: "plugin"; readonly plugin: string; readonly form?: string }
  | {
    readonly kind: "model";
    readonly provider: string;
    readonly model: string;
    /** Provider-specific state that must be sent back verbatim on the next request. */
    readonly replayState?: unknown;
  }
  | { readonly kind: "tool"; readonly callId: string };

/** A message from the user side (a prompt, injected context, or a tool result). */
export interface UserMessage {
  readonly id: string;
  readonly role: "user";
  readonly content: readonly ContentBlock[];
  readonly source: MessageSource;
}

/** A message from the model. */
export interface AssistantMessage {
  readonly id: string;
  readonly role: "assistant";
  readonly content: readonly ContentBlock[];
  readonly source: MessageSource & { readonly kind: "model" };
}

/** A message of the model-facing history. */
export type Message = UserMessage | AssistantMessage;

/** The model-facing description of a tool: nothing else of a tool ever reaches a model. */
export interface ToolSchema {
  readonly name: string;
  readonly description: string;
  /** JSON Schema of the arguments object. */
  readonly parameters: Readonly<Record<string, unknown>>;
}
