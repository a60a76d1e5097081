/**
 * Canonical chat messages: the protocol-neutral form every client request is lowered to and
 * the model's chat template renders (the OpenAI/Hugging Face message shape).
 *
 * @module
 */

/** A tool call inside an assistant message; `arguments` stays an object, as HF templates expect. */
export interface ChatToolCall {
  readonly id?: string;
  readonly type: "function";
  readonly function: { readonly name: string; readonly arguments: Record<string, unknown> };
}

/**
 * An image where a vision-language template renders its placeholder (`type: "image"`, which
 * Qwen-VL templates test for). `tokens` is how many image-pad tokens the model's processor gives
 * it: the one pad the template renders is expanded to that many. `data` is its bytes as base64,
 * present from lowering until the route takes it out ({@linkcode takeImageData}): neither the
 * template nor a record ever sees it.
 */
export interface ChatImage {
  readonly type: "image";
  /** SHA-256 of its bytes, 64 hex digits: its identity. */
  readonly digest: string;
  readonly media_type: string;
  readonly width: number;
  readonly height: number;
  readonly bytes: number;
  readonly tokens: number;
  readonly data?: string;
}

/** A part of a message that holds images: text, or an image. */
export type ChatPart = { readonly type: "text"; readonly text: string } | ChatImage;

/** What a user or tool message says: text, or parts when it holds images (vision models only). */
export type ChatContent = string | readonly ChatPart[];

/** One message as the chat template sees it. */
export type ChatMessage =
  | { readonly role: "system"; readonly content: string }
  | { readonly role: "user"; readonly content: ChatContent }
  | {
    readonly role: "assistant";
    readonly content: string;
    /** Reasoning text; templates decide whether earlier turns keep it. */
    readonly reasoning_content?: string;
    readonly tool_calls?: readonly ChatToolCall[];
  }
  | {
    readonly role: "tool";
    readonly content: ChatContent;
    readonly tool_call_id?: string;
    /** The tool whose call this answers, when known; templates that label results read it. */
    readonly name?: string;
  };

/** A tool offered to the model, in the function-calling shape chat templates render. */
export interface ChatTool {
  readonly type: "function";
  readonly function: {
    readonly name: string;
    readonly description?: string;
    readonly parameters: Record<string, unknown>;
  };
}

/** A whole prompt before rendering: the conversation, the tools and template switches. */
export interface ChatPrompt {
  readonly messages: readonly ChatMessage[];
  readonly tools: readonly ChatTool[];
  /** `false` asks a hybrid-reasoning template to close thinking; `undefined` keeps its default. */
  readonly enableThinking?: boolean;
}

/**
 * The images of `messages`, in the order a template renders them.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { messageImages } from "./message.ts";
 * const image = { type: "image" as const, digest: "d", media_type: "image/png", width: 1, height: 1, bytes: 9, tokens: 4 };
 * assert.deepEqual(messageImages([{ role: "user", content: [{ type: "text", text: "a" }, image] }]), [image]);
 * assert.deepEqual(messageImages([{ role: "user", content: "a" }]), []);
 * ```
 */
export function messageImages(messages: readonly ChatMessage[]): ChatImage[] {
  const images: ChatImage[] = [];
  for (const message of messages) {
    if (typeof message.content === "string") continue;
    for (const part of message.content) if (part.type === "image") images.push(part);
  }
  return images;
}

/**
 * `messages` with their images' bytes taken out, and the images (bytes included) in render
 * order: what the engine is sent beside the tokens, kept out of templates and records.
 */
export function takeImageData(
  messages: readonly ChatMessage[],
): { messages: ChatMessage[]; images: ChatImage[] } {
  const images: ChatImage[] = [];
  const out = messages.map((message): ChatMessage => {
    if (typeof message.content === "string" || message.role === "system") return message;
    if (!message.content.some((part) => part.type === "image")) return message;
    const content = message.content.map((part): ChatPart => {
      if (part.type !== "image") return part;
      images.push(part);
      const { data: _, ...kept } = part;
      return kept;
    });
    return { ...message, content } as ChatMessage;
  });
  return { messages: out, images };
}

/** The text of a message's content, its images left out (what a text reader sees of it). */
export function contentText(content: ChatContent): string {
  if (typeof content === "string") return content;
  return content.map((part) => (part.type === "text" ? part.text : "")).join("");
}
