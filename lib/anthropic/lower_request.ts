/**
 * Lowers an Anthropic Messages request to canonical chat messages (reference §4.1): what the
 * chat template renders. Pure functions; bad input throws {@linkcode InvalidRequestError}.
 *
 * @module
 */
import { InvalidRequestError } from "../errors/mod.ts";
import type {
  ChatContent,
  ChatImage,
  ChatMessage,
  ChatPart,
  ChatTool,
  ChatToolCall,
} from "../chat/mod.ts";
import {
  imageGrid,
  type ImageLimits,
  ImageRefusedError,
  probeImageOf,
  VisionError,
  type VisionSettings,
} from "../vision/mod.ts";
import { mediaPlaceholder } from "./media.ts";
import type { ContentBlockParam, MessageCreateParams, MessageParam, ToolParam } from "./types.ts";

/** How images reach a vision-language model: its processor's settings and the edge's bounds. */
export interface VisionLowering {
  readonly settings: VisionSettings;
  readonly limits: ImageLimits & {
    /** Most images one request may hold, its history included. */
    readonly maxImages: number;
  };
}

/** Choices in lowering that are deployment settings. */
export interface LowerOptions {
  /**
   * Image blocks: replaced by a text placeholder (`media.ts`), refused, or given to a vision
   * model as image parts (`vision` must then be set). Documents are placeholders unless refused.
   */
  readonly images: "placeholder" | "reject" | "vision";
  readonly vision?: VisionLowering;
  /** Keep Claude Code's attribution line in the system prompt. */
  readonly keepAttribution: boolean;
  /**
   * The id a tool result shows the template: the client's, or `functions.NAME:INDEX` (the call's
   * name and place in its assistant message), the ids Kimi K2's template writes for calls.
   */
  readonly toolCallIds?: "client" | "functions";
}

/** Images as placeholders; the attribution line kept out of the prompt. */
export const DEFAULT_LOWER_OPTIONS: LowerOptions = {
  images: "placeholder",
  keepAttribution: false,
};

/**
 * Claude Code's attribution line (`x-anthropic-billing-header: cc_version=…`), kept out of the
 * prompt by default: it carries the client's version, which has nothing to teach the model and
 * would make prompts differ between client builds.
 */
const BILLING_HEADER = /^\s*x-anthropic-billing-header:[^\n]*\n?/;

/** The system prompt as one string (blocks joined by newlines). */
export function lowerSystem(
  system: MessageCreateParams["system"],
  options: LowerOptions = DEFAULT_LOWER_OPTIONS,
): string {
  if (system === undefined) return "";
  const blocks = typeof system === "string" ? [system] : system.map((block) => block.text);
  const kept = options.keepAttribution
    ? blocks
    : blocks.map((text) => text.replace(BILLING_HEADER, ""));
  return kept.filter((text) => text.length > 0).join("\n");
}

/** Client tools in function-calling shape; server tools (no `input_schema`) are dropped. */
export function lowerTools(tools: readonly ToolParam[] | undefined): ChatTool[] {
  return (tools ?? []).flatMap((tool) =>
    tool.input_schema === undefined ? [] : [{
      type: "function" as const,
      function: {
        name: tool.name,
        ...(tool.description === undefined ? {} : { description: tool.description }),
        parameters: tool.input_schema,
      },
    }]
  );
}

/** Template switch for reasoning: off when thinking is disabled, on when enabled or adaptive. */
export function lowerThinking(thinking: MessageCreateParams["thinking"]): boolean | undefined {
  if (thinking === undefined) return undefined;
  return thinking.type !== "disabled";
}

/**
 * Lowers consecutive Anthropic messages. `offset` is the index of `messages[0]` in the request,
 * used in error messages; `before` is the message before it, whose tool calls the first tool
 * results answer. A mid-conversation `system` message is folded into the user turn it follows
 * as a `<system-reminder>`. A tool result is named after the call it answers in the assistant
 * message before it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { lowerMessages } from "./lower_request.ts";
 * assert.deepEqual(lowerMessages([{ role: "user", content: "hi" }]), [{
 *   role: "user",
 *   content: "hi",
 * }]);
 * ```
 */
export function lowerMessages(
  messages: readonly MessageParam[],
  offset = 0,
  options: LowerOptions = DEFAULT_LOWER_OPTIONS,
  before?: MessageParam,
): ChatMessage[] {
  const out: ChatMessage[] = [];
  let called = calledTools(before);
  messages.forEach((message, i) => {
    const where = `messages.${offset + i}`;
    const blocks: ContentBlockParam[] = typeof message.content === "string"
      ? [{ type: "text", text: message.content }]
      : message.content;
    if (message.role === "assistant") out.push(lowerAssistant(blocks, where));
    else if (message.role === "user") out.push(...lowerUser(blocks, where, options, called));
    else foldSystem(out, blocks, where, offset + i);
    called = calledTools(message);
  });
  return out;
}

/** A call an assistant message makes: its tool and its place among the message's calls. */
interface Called {
  readonly name: string;
  readonly index: number;
}

/** The calls an assistant message makes, by tool-use id. */
function calledTools(message: MessageParam | undefined): ReadonlyMap<string, Called> {
  const called = new Map<string, Called>();
  if (message?.role !== "assistant" || typeof message.content === "string") return called;
  for (const block of message.content) {
    if (block.type === "tool_use") called.set(block.id, { name: block.name, index: called.size });
  }
  return called;
}

function lowerUser(
  blocks: readonly ContentBlockParam[],
  where: string,
  options: LowerOptions,
  called: ReadonlyMap<string, Called>,
): ChatMessage[] {
  const tools: ChatMessage[] = [];
  const pieces: (string | ChatImage)[] = [];
  blocks.forEach((block, j) => {
    const at = `${where}.content.${j}`;
    switch (block.type) {
      case "tool_result": {
        const content = toolResultContent(block.content, at, options);
        const call = called.get(block.tool_use_id);
        tools.push({
          role: "tool",
          tool_call_id: options.toolCallIds === "functions" && call
            ? `functions.${call.name}:${call.index}`
            : block.tool_use_id,
          ...(call === undefined ? {} : { name: call.name }),
          content: block.is_error ? withPrefix("Error: ", content) : content,
        });
        break;
      }
      case "text":
        pieces.push(block.text);
        break;
      case "search_result":
      case "mid_conv_system":
        pieces.push(nestedText(block));
        break;
      case "image":
      case "document":
        pieces.push(mediaPiece(block, at, "user", options));
        break;
      default:
        throw unsupported(block.type, at, "user");
    }
  });
  return pieces.length > 0 ? [...tools, { role: "user", content: joinPieces(pieces) }] : tools;
}

/**
 * What stands for an image or document block: an image part for a vision model, else a text
 * placeholder (refused under the reject policy).
 */
function mediaPiece(
  block: { type: string; source?: unknown },
  at: string,
  role: string,
  options: LowerOptions,
): string | ChatImage {
  if (options.images === "reject") throw unsupported(block.type, at, role);
  if (block.type === "image" && options.images === "vision" && options.vision) {
    return visionImage(block.source, at, options.vision);
  }
  return mediaPlaceholder(block);
}

/**
 * An image block's source as the vision model's image part: base64 bytes only (the gateway
 * fetches nothing), checked by `probeImage` and counted by the processor's settings.
 *
 * @throws {InvalidRequestError} for a source that is not base64 bytes; {ImageRefusedError}
 * naming `<at>.source.data`.
 */
function visionImage(source: unknown, at: string, vision: VisionLowering): ChatImage {
  const { type, data } = (typeof source === "object" && source !== null ? source : {}) as {
    type?: unknown;
    data?: unknown;
  };
  if (type === "url") {
    throw new InvalidRequestError(
      `${at}.source: an image at a URL is not fetched (the gateway reaches no network); send its bytes as base64`,
    );
  }
  if (type !== "base64" || typeof data !== "string") {
    throw new InvalidRequestError(`${at}.source: an image must be given as base64 bytes`);
  }
  try {
    const image = probeImageOf(source as object, data, vision.limits);
    const { tokens } = imageGrid(vision.settings, image.width, image.height);
    return {
      type: "image",
      digest: image.digest,
      media_type: image.mediaType,
      width: image.width,
      height: image.height,
      bytes: image.bytes,
      tokens,
      data: image.base64,
    };
  } catch (error) {
    if (error instanceof ImageRefusedError) throw error.at(`${at}.source.data`);
    if (error instanceof VisionError) {
      throw new ImageRefusedError("pixels", `${at}.source.data: ${error.message}`);
    }
    throw error;
  }
}

/**
 * Texts and images as a message's content: texts joined by newlines, as ever, and a plain
 * string when there is no image (a text-only message renders as it always did).
 */
function joinPieces(pieces: readonly (string | ChatImage)[]): ChatContent {
  if (pieces.every((piece) => typeof piece === "string")) return pieces.join("\n");
  const parts: ChatPart[] = [];
  let texts: string[] = [];
  const flush = () => {
    if (texts.length > 0) parts.push({ type: "text", text: texts.join("\n") });
    texts = [];
  };
  for (const piece of pieces) {
    if (typeof piece === "string") texts.push(piece);
    else {
      flush();
      parts.push(piece);
    }
  }
  flush();
  return parts;
}

/** `content` led by `prefix` (an error result's `Error: `). */
function withPrefix(prefix: string, content: ChatContent): ChatContent {
  if (typeof content === "string") return `${prefix}${content}`;
  const first = content[0];
  return first?.type === "text"
    ? [{ type: "text", text: `${prefix}${first.text}` }, ...content.slice(1)]
    : [{ type: "text", text: prefix }, ...content];
}

function lowerAssistant(blocks: readonly ContentBlockParam[], where: string): ChatMessage {
  const texts: string[] = [];
  const reasoning: string[] = [];
  const calls: ChatToolCall[] = [];
  blocks.forEach((block, j) => {
    switch (block.type) {
      case "text":
        texts.push(block.text);
        break;
      case "thinking":
        reasoning.push(block.thinking);
        break;
      case "redacted_thinking":
        break; // opaque to the template
      case "tool_use":
        calls.push({
          id: block.id,
          type: "function",
          function: { name: block.name, arguments: block.input },
        });
        break;
      default:
        throw unsupported(block.type, `${where}.content.${j}`, "assistant");
    }
  });
  return {
    role: "assistant",
    content: texts.join("\n"),
    ...(reasoning.length > 0 ? { reasoning_content: reasoning.join("\n") } : {}),
    ...(calls.length > 0 ? { tool_calls: calls } : {}),
  };
}

/** Folds a mid-conversation system message into the user turn before it. */
function foldSystem(
  out: ChatMessage[],
  blocks: readonly ContentBlockParam[],
  where: string,
  index: number,
): void {
  if (index === 0) {
    throw new InvalidRequestError(`${where}: a system message cannot be the first message`);
  }
  const text = blocks.map((block, j) => {
    if (block.type === "text" || block.type === "mid_conv_system") return nestedText(block);
    throw unsupported(block.type, `${where}.content.${j}`, "system");
  }).join("\n");
  const reminder = `<system-reminder>\n${text}\n</system-reminder>`;
  const last = out.at(-1);
  if (last?.role === "user") {
    out[out.length - 1] = {
      role: "user",
      content: typeof last.content === "string" ? `${last.content}\n${reminder}` : joinPieces([
        ...last.content.map((part) => part.type === "text" ? part.text : part),
        reminder,
      ]),
    };
  } else out.push({ role: "user", content: reminder });
}

function toolResultContent(content: unknown, at: string, options: LowerOptions): ChatContent {
  if (content === undefined) return "";
  if (typeof content === "string") return content;
  return joinPieces((content as ContentBlockParam[]).map((block, k) => {
    if (block.type === "image" || block.type === "document") {
      return mediaPiece(block, `${at}.content.${k}`, "tool_result", options);
    }
    return nestedText(block as { type: string });
  }));
}

/**
 * How many image blocks a request holds, tool results included: bounded at the edge, since each
 * costs its bytes and a vision model's tokens.
 *
 * @throws {ImageRefusedError} (`too_many`, a 413) past `max`.
 */
export function checkImageCount(messages: readonly MessageParam[], max: number): void {
  let count = 0;
  for (const message of messages) {
    if (typeof message.content === "string") continue;
    for (const block of message.content) {
      if (block.type === "image") count++;
      else if (block.type === "tool_result" && Array.isArray(block.content)) {
        for (const inner of block.content) if (inner.type === "image") count++;
      }
    }
  }
  if (count > max) {
    throw new ImageRefusedError(
      "too_many",
      `messages: a request may hold at most ${max} images, not ${count}`,
    );
  }
}

/** Text of blocks that carry text in some nested shape (loosely validated: anything may be there). */
function nestedText(block: { type: string; [key: string]: unknown }): string {
  if (typeof block !== "object" || block === null) return "";
  if (typeof block.text === "string") return block.text;
  if (block.type === "tool_reference") return String(block.tool_name);
  if (Array.isArray(block.content)) {
    return block.content.map((inner) => nestedText(inner as { type: string })).join("\n");
  }
  return "";
}

function unsupported(type: string, at: string, role: string): InvalidRequestError {
  if (type === "image" || type === "document") {
    return new InvalidRequestError(
      `${at}: ${type} blocks are not supported: the served model reads text only`,
    );
  }
  const article = role === "assistant" ? "an" : "a";
  return new InvalidRequestError(
    `${at}: a ${type} block cannot appear in ${article} ${role} message`,
  );
}
