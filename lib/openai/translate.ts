/**
 * A Chat Completions conversation in the session's canonical form, the Messages shape
 * (docs/DESIGN.md §1.1): leading system and developer messages become the system prompt, tool
 * messages become `tool_result` blocks of one user message (with the user message that follows
 * them, if any), assistant tool calls become `tool_use` blocks with their JSON arguments
 * parsed, and `reasoning_content` becomes a thinking block. Both protocols then share one
 * lowering and one message identity, so the same conversation renders the same tokens over
 * either, and one session may mix them.
 *
 * Problems are reported with the request's own paths (`messages.3.tool_calls.0…`), before
 * lowering sees the translated messages.
 *
 * @module
 */
import { InvalidRequestError } from "../errors/mod.ts";
import {
  type ContentBlockParam,
  type LowerOptions,
  type MessageCreateParams,
  type MessageParam,
  sourceFromUrl,
  type ToolParam,
  type VisionLowering,
} from "../anthropic/mod.ts";
import { jsonShapeProblem, MAX_JSON_DEPTH } from "../limits/mod.ts";
import { ImageRefusedError, probeImageOf } from "../vision/mod.ts";
import type { ChatCompletionCreateParams, ChatMessageParam, FunctionTool } from "./types.ts";

/** An empty parameters schema: what a function without `parameters` takes. */
const NO_PARAMETERS = { type: "object", properties: {} };

/**
 * The request's conversation, tools and template switch in the Messages shape. Sampling and
 * output options are the adapter's to read from the original request.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { toMessagesRequest } from "./translate.ts";
 * const request = toMessagesRequest({
 *   model: "m",
 *   messages: [{ role: "system", content: "Be brief." }, { role: "user", content: "hi" }],
 * });
 * assert.equal(request.system, "Be brief.");
 * assert.deepEqual(request.messages, [{ role: "user", content: "hi" }]);
 * ```
 * @throws {InvalidRequestError} for what the gateway cannot serve: a legacy `function` message,
 * audio, an image or file under the reject policy, a last assistant message (prefill), tool
 * arguments that are not a JSON object, a conversation of system messages only.
 */
export function toMessagesRequest(
  request: ChatCompletionCreateParams,
  options: Pick<LowerOptions, "images" | "vision"> = { images: "placeholder" },
): MessageCreateParams {
  const { messages } = request;
  const last = messages.length - 1;
  if (messages[last].role === "assistant") {
    throw new InvalidRequestError(
      `messages.${last}: the last message must not be an assistant message (prefill is not supported)`,
    );
  }
  let start = 0;
  const system: string[] = [];
  while (start < messages.length && isSystem(messages[start])) {
    system.push(textOf(messages[start] as SystemLike));
    start++;
  }
  if (start === messages.length) {
    throw new InvalidRequestError("messages: at least one user message is required");
  }
  const out: MessageParam[] = [];
  /** The last translated message is a user message opened by tool results. */
  let openResults = false;
  for (let i = start; i < messages.length; i++) {
    const message = messages[i];
    const where = `messages.${i}`;
    switch (message.role) {
      case "system":
      case "developer":
        out.push({ role: "system", content: textOf(message) });
        openResults = false;
        break;
      case "user": {
        const blocks = userBlocks(message.content, where, options);
        if (openResults) {
          const results = out[out.length - 1].content as ContentBlockParam[];
          out[out.length - 1] = {
            role: "user",
            content: [...results, ...(typeof blocks === "string" ? [text(blocks)] : blocks)],
          };
        } else out.push({ role: "user", content: blocks });
        openResults = false;
        break;
      }
      case "tool": {
        const result: ContentBlockParam = {
          type: "tool_result",
          tool_use_id: message.tool_call_id,
          content: typeof message.content === "string"
            ? message.content
            : message.content.map((part) => ({ type: "text" as const, text: part.text })),
        };
        if (openResults) (out[out.length - 1].content as ContentBlockParam[]).push(result);
        else out.push({ role: "user", content: [result] });
        openResults = true;
        break;
      }
      case "assistant":
        out.push({ role: "assistant", content: assistantBlocks(message, where) });
        openResults = false;
        break;
      default:
        throw new InvalidRequestError(
          `${where}.role: the legacy "function" role is not supported; send tool calls and tool messages`,
        );
    }
  }
  const enableThinking = request.chat_template_kwargs?.enable_thinking;
  return {
    model: request.model,
    max_tokens: 0,
    messages: out,
    ...(system.length > 0 ? { system: system.join("\n") } : {}),
    ...(request.tools ? { tools: request.tools.map(toolParam) } : {}),
    ...(enableThinking === undefined
      ? {}
      : { thinking: { type: enableThinking ? "enabled" : "disabled" } }),
  };
}

type SystemLike = Extract<ChatMessageParam, { role: "system" | "developer" }>;

function isSystem(message: ChatMessageParam): message is SystemLike {
  return message.role === "system" || message.role === "developer";
}

/** Text of a string-or-text-parts content, parts joined by newlines. */
function textOf(message: { content: string | readonly { text: string }[] }): string {
  return typeof message.content === "string"
    ? message.content
    : message.content.map((part) => part.text).join("\n");
}

function text(value: string): ContentBlockParam {
  return { type: "text", text: value };
}

/** A user message's content: text stays a string; parts become blocks. */
function userBlocks(
  content: Extract<ChatMessageParam, { role: "user" }>["content"],
  where: string,
  options: Pick<LowerOptions, "images" | "vision">,
): string | ContentBlockParam[] {
  if (typeof content === "string") return content;
  return content.map((part, k): ContentBlockParam => {
    const at = `${where}.content.${k}`;
    switch (part.type) {
      case "text":
        return text(part.text);
      case "input_audio":
        return mediaBlock("audio", part.type, at, options);
      case "image_url":
        return mediaBlock("image", part.type, at, options, part.image_url);
      case "file":
        return mediaBlock("document", part.type, at, options, part.file);
    }
  });
}

/**
 * A media part at `at` (its protocol's `type` named in the error): audio is refused; an image or
 * file is refused under the reject policy, else an image or document block whose source, in the
 * Messages shape, is read from `reference` (see {@linkcode mediaSourceOf}), for the placeholder
 * that names its format and size.
 *
 * @throws {InvalidRequestError} naming the part.
 */
export function mediaBlock(
  kind: "audio" | "image" | "document",
  type: string,
  at: string,
  options: Pick<LowerOptions, "images" | "vision">,
  reference?: unknown,
): ContentBlockParam {
  if (kind === "audio" || options.images === "reject") {
    throw new InvalidRequestError(
      `${at}: ${type} parts are not supported: the served model reads text only`,
    );
  }
  const source = mediaSourceOf(reference);
  if (kind === "image" && options.images === "vision" && options.vision) {
    checkVisionSource(source, at, type, options.vision);
  }
  return { type: kind, source };
}

/**
 * An image part's source as a vision model takes it: a `data:` URL's base64 bytes, checked here
 * so a refusal names the part's own field (the lowering reuses the check).
 *
 * @throws {InvalidRequestError} for a remote URL (the gateway fetches nothing) or no image;
 * {ImageRefusedError} for bytes past the bounds or not an image.
 */
function checkVisionSource(
  source: Record<string, string> | null,
  at: string,
  type: string,
  vision: VisionLowering,
): void {
  if (source?.type === "url") {
    throw new InvalidRequestError(
      `${at}: an ${type} at a remote URL is not fetched (the gateway reaches no network); send a data: URL`,
    );
  }
  if (source?.type !== "base64") {
    throw new InvalidRequestError(`${at}: an ${type} part must carry a data: URL`);
  }
  try {
    probeImageOf(source, source.data, vision.limits);
  } catch (error) {
    throw error instanceof ImageRefusedError ? error.at(at) : error;
  }
}

/**
 * The source of an OpenAI image or file reference in the Messages shape: a URL string or an
 * object's `url`, `image_url` or `file_url` (a `data:` URL's content as base64), its `file_data`,
 * or its `file_id`; `null` when it names none.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { mediaSourceOf } from "./translate.ts";
 * assert.deepEqual(mediaSourceOf({ url: "data:image/gif;base64,R0lGOD" }), {
 *   type: "base64",
 *   media_type: "image/gif",
 *   data: "R0lGOD",
 * });
 * assert.deepEqual(mediaSourceOf({ file_id: "file-1" }), { type: "file", file_id: "file-1" });
 * ```
 */
export function mediaSourceOf(reference: unknown): Record<string, string> | null {
  if (typeof reference === "string") return sourceFromUrl(reference);
  if (typeof reference !== "object" || reference === null) return null;
  const field = (name: string): string | null => {
    const value = Object.hasOwn(reference, name)
      ? (reference as Record<string, unknown>)[name]
      : undefined;
    return typeof value === "string" ? value : null;
  };
  const url = field("url") ?? field("image_url") ?? field("file_url");
  if (url !== null) return sourceFromUrl(url);
  const data = field("file_data");
  if (data !== null) {
    return data.startsWith("data:")
      ? sourceFromUrl(data)
      : { type: "base64", media_type: "", data };
  }
  const id = field("file_id");
  return id === null ? null : { type: "file", file_id: id };
}

function assistantBlocks(
  message: Extract<ChatMessageParam, { role: "assistant" }>,
  where: string,
): ContentBlockParam[] {
  const blocks: ContentBlockParam[] = [];
  const reasoning = message.reasoning_content ?? message.reasoning;
  // Unsigned: the gateway's own records are what it trusts, not a client's reasoning text.
  if (reasoning) blocks.push({ type: "thinking", thinking: reasoning, signature: "" });
  const content = message.content;
  if (typeof content === "string") {
    if (content.length > 0) blocks.push(text(content));
  } else if (content) {
    for (const part of content) blocks.push(text(part.type === "text" ? part.text : part.refusal));
  }
  (message.tool_calls ?? []).forEach((call, k) => {
    blocks.push({
      type: "tool_use",
      id: call.id,
      name: call.function.name,
      input: parseArguments(call.function.arguments, `${where}.tool_calls.${k}.function.arguments`),
    });
  });
  return blocks;
}

/**
 * A tool call's arguments as an object (templates render objects); `""` is a call without any.
 *
 * @throws {InvalidRequestError} when the text is not a JSON object.
 */
export function parseArguments(json: string, at: string): Record<string, unknown> {
  if (json.trim() === "") return {};
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch {
    throw new InvalidRequestError(`${at}: not valid JSON`);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new InvalidRequestError(`${at}: must be a JSON object`);
  }
  // Held to the body's own rules: bounded nesting, no `__proto__` keys.
  const problem = jsonShapeProblem(value, MAX_JSON_DEPTH);
  if (problem) {
    throw new InvalidRequestError(
      `${at}${problem.path ? `.${problem.path}` : ""}: ${problem.message}`,
    );
  }
  return value as Record<string, unknown>;
}

function toolParam(tool: FunctionTool): ToolParam {
  const { name, description, parameters } = tool.function;
  return {
    name,
    ...(description === undefined ? {} : { description }),
    input_schema: parameters ?? NO_PARAMETERS,
  };
}
