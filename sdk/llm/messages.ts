/**
 * Messages and content blocks: the model-facing history, as the session log
 * stores it and as adapters serialise it.
 *
 * @module
 */

/** Plain text. */
export interface TextBlock {
  /** The block's kind. */
  readonly type: "text";
  /** The text. */
  readonly text: string;
}

/** The model's visible reasoning ("thinking"). */
export interface ReasoningBlock {
  /** The block's kind. */
  readonly type: "reasoning";
  /** The reasoning text. */
  readonly text: string;
}

/** An image, inline as base64 data or by URL. */
export interface ImageBlock {
  /** The block's kind. */
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
  /** The block's kind. */
  readonly type: "tool-call";
  /** The call id the result refers to. */
  readonly id: string;
  /** The tool's name. */
  readonly name: string;
  /** The arguments, as the raw JSON string the model produced. */
  readonly arguments: string;
}

/** The result of a tool call, as the model sees it. */
export interface ToolResultBlock {
  /** The block's kind. */
  readonly type: "tool-result";
  /** The id of the call this answers. */
  readonly toolCallId: string;
  /** What the tool returned. */
  readonly content: readonly (TextBlock | ImageBlock)[];
  /** `true` when the tool failed; the content then describes the failure. */
  readonly isError?: boolean;
}

/**
 * The content block vocabulary: block type → block. An interface, so a
 * plugin adds its own block with declaration merging in its own code
 * (`declare module "@dsh/harness" { interface ContentBlockMap { … } }`);
 * {@linkcode ContentBlock} is the union of its values. Adapters that do not
 * know a block type must fail the call with `UNSUPPORTED_FEATURE`.
 */
export interface ContentBlockMap {
  /** Plain text. */
  text: TextBlock;
  /** The model's reasoning. */
  reasoning: ReasoningBlock;
  /** An image attachment. */
  image: ImageBlock;
  /** A tool call of the model. */
  "tool-call": ToolCallBlock;
  /** A tool's result. */
  "tool-result": ToolResultBlock;
}

/** Every kind of content block: the values of {@linkcode ContentBlockMap}. */
export type ContentBlock = ContentBlockMap[keyof ContentBlockMap];

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
  /** Unique within the session. */
  readonly id: string;
  /** The message's role. */
  readonly role: "user";
  /** The content blocks. */
  readonly content: readonly ContentBlock[];
  /** Who produced the message. */
  readonly source: MessageSource;
}

/** A message from the model. */
export interface AssistantMessage {
  /** Unique within the session. */
  readonly id: string;
  /** The message's role. */
  readonly role: "assistant";
  /** The content blocks, as assembled from the stream. */
  readonly content: readonly ContentBlock[];
  /** The provider and model that produced the message. */
  readonly source: MessageSource & { readonly kind: "model" };
}

/**
 * Model-visible context that is not the user's turn: a prompt `context()`
 * contribution, a hook's context, a tool's additional context. Adapters send
 * it in the provider's system role, in its place in the history.
 */
export interface SystemMessage {
  /** Unique within the session. */
  readonly id: string;
  /** The message's role. */
  readonly role: "system";
  /** The content blocks (text). */
  readonly content: readonly ContentBlock[];
  /** Who contributed it. */
  readonly source: MessageSource;
}

/** A message of the model-facing history. */
export type Message = UserMessage | AssistantMessage | SystemMessage;

/** The model-facing description of a tool: nothing else of a tool ever reaches a model. */
export interface ToolSchema {
  /** The tool's name, unique among the tools of a request. */
  readonly name: string;
  /** What the tool does, for the model. */
  readonly description: string;
  /** JSON Schema of the arguments object. */
  readonly parameters: Readonly<Record<string, unknown>>;
}
