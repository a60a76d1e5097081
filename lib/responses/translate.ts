/**
 * A Responses API conversation in the session's canonical form, the Messages shape
 * (docs/DESIGN.md §1.1), as Chat Completions requests are: `instructions` and leading system or
 * developer messages become the system prompt; the items of one assistant turn (reasoning,
 * its message, its function calls) become one assistant message of thinking, text and
 * `tool_use` blocks; function call outputs become `tool_result` blocks of one user message
 * (with the user message after them, if any); function tools, those of namespaces too, are shown
 * to the model, built-in ones are not (the model cannot run them). Routing, lowering and echo
 * identities are then the Messages adapter's own, so the same conversation renders the same
 * tokens over every protocol, and one session may mix them.
 *
 * Problems are reported with the request's own paths (`input.3.arguments`).
 *
 * @module
 */
import { InvalidRequestError } from "../errors/mod.ts";
import {
  type ContentBlockParam,
  type LowerOptions,
  type MessageCreateParams,
  type MessageParam,
  type ToolParam,
} from "../anthropic/mod.ts";
import { mediaBlock, parseArguments } from "../openai/mod.ts";
import { offeredFunctions } from "./offered_functions.ts";
import type {
  ContentPart,
  FunctionTool,
  InputItem,
  ResponseCreateParams,
  ServedItem,
} from "./types.ts";

/** An empty parameters schema: what a function without `parameters` takes. */
const NO_PARAMETERS = { type: "object", properties: {} };

type Message = Extract<ServedItem, { type: "message" }>;
type ToolResult = Extract<ContentBlockParam, { type: "tool_result" }>;
type Reasoning = Extract<ServedItem, { type: "reasoning" }>;

/**
 * The request's conversation and tools in the Messages shape. Sampling and output options are
 * the adapter's to read from the original request.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { toMessagesRequest } from "./translate.ts";
 * const request = toMessagesRequest({ model: "m", instructions: "Be brief.", input: "hi" });
 * assert.equal(request.system, "Be brief.");
 * assert.deepEqual(request.messages, [{ role: "user", content: "hi" }]);
 * ```
 * @throws {InvalidRequestError} for what the gateway cannot serve: an item type other than
 * message, reasoning, function_call and function_call_output; audio, or an image or file under
 * the reject policy; an input ending with the assistant's items (prefill); arguments that are not
 * a JSON object; no user message. A `LimitError` for more functions than a request may offer.
 */
export function toMessagesRequest(
  request: ResponseCreateParams,
  options: Pick<LowerOptions, "images" | "vision"> = { images: "placeholder" },
): MessageCreateParams {
  const items: InputItem[] = typeof request.input === "string"
    ? [{ type: "message", role: "user", content: request.input }]
    : request.input;
  const system: string[] = request.instructions ? [request.instructions] : [];
  let start = 0;
  while (start < items.length && isSystem(items[start])) {
    system.push(messageText(items[start] as Message, `input.${start}`));
    start++;
  }
  const out: MessageParam[] = [];
  /** What the last translated message is: an assistant turn, or tool results still open. */
  const state: { open: "assistant" | "results" | null } = { open: null };
  const assistant = (): ContentBlockParam[] => {
    if (state.open !== "assistant") {
      out.push({ role: "assistant", content: [] });
      state.open = "assistant";
    }
    return out[out.length - 1].content as ContentBlockParam[];
  };
  for (let i = start; i < items.length; i++) {
    const item = items[i];
    const where = `input.${i}`;
    switch (item.type) {
      case "message": {
        const message = item as Message;
        if (message.role === "assistant") {
          assistant().push(...assistantText(message, where));
        } else if (message.role === "user") {
          const blocks = userBlocks(message.content, where, options);
          if (state.open === "results") {
            const results = out[out.length - 1].content as ContentBlockParam[];
            results.push(...(typeof blocks === "string" ? [text(blocks)] : blocks));
          } else out.push({ role: "user", content: blocks });
          state.open = null;
        } else {
          out.push({ role: "system", content: messageText(message, where) });
          state.open = null;
        }
        break;
      }
      case "reasoning": {
        const reasoning = reasoningText(item as Reasoning);
        // Unsigned: the gateway's own records are what it trusts, not a client's reasoning.
        // An empty one (its text not echoed) adds nothing to the turn.
        if (reasoning) assistant().push({ type: "thinking", thinking: reasoning, signature: "" });
        break;
      }
      case "function_call": {
        const call = item as Extract<ServedItem, { type: "function_call" }>;
        assistant().push({
          type: "tool_use",
          id: call.call_id,
          name: call.name,
          input: parseArguments(call.arguments, `${where}.arguments`),
        });
        break;
      }
      case "function_call_output": {
        const result = item as Extract<ServedItem, { type: "function_call_output" }>;
        const block: ContentBlockParam = {
          type: "tool_result",
          tool_use_id: result.call_id,
          content: typeof result.output === "string"
            ? result.output
            // Text, image and document blocks only: what a tool result may hold.
            : resultParts(result.output, `${where}.output`, options) as ToolResult["content"],
        };
        if (state.open === "results") {
          (out[out.length - 1].content as ContentBlockParam[]).push(block);
        } else out.push({ role: "user", content: [block] });
        state.open = "results";
        break;
      }
      default:
        throw new InvalidRequestError(
          `${where}.type: "${item.type}" items are not supported; send messages, reasoning, function_call and function_call_output items`,
        );
    }
  }
  if (out.length === 0) {
    throw new InvalidRequestError("input: at least one user message is required");
  }
  // Built-in and hosted tools (web_search, custom…) are the provider's to run: the served model
  // is shown function tools only (namespaced ones too), so it never calls the others.
  const { functions } = offeredFunctions(request.tools);
  if (state.open === "assistant") {
    throw new InvalidRequestError(
      `input.${
        items.length - 1
      }: the input must not end with the assistant's items (prefill is not supported)`,
    );
  }
  return {
    model: request.model,
    max_tokens: 0,
    messages: out,
    ...(system.length > 0 ? { system: system.join("\n") } : {}),
    ...(functions.length > 0 ? { tools: functions.map(toolParam) } : {}),
  };
}

function isSystem(item: InputItem): boolean {
  return item.type === "message" && ["system", "developer"].includes((item as Message).role);
}

function text(value: string): ContentBlockParam {
  return { type: "text", text: value };
}

/** A system or developer message's text, parts joined by newlines. */
function messageText(message: Message, where: string): string {
  if (typeof message.content === "string") return message.content;
  return message.content.map((part, k) => {
    if (part.type === "input_text" || part.type === "output_text") return part.text;
    throw new InvalidRequestError(
      `${where}.content.${k}: ${message.role} messages take text parts only`,
    );
  }).join("\n");
}

/** An assistant message's text blocks (refusals are text the model wrote). */
function assistantText(message: Message, where: string): ContentBlockParam[] {
  if (typeof message.content === "string") {
    return message.content.length > 0 ? [text(message.content)] : [];
  }
  return message.content.map((part, k) => {
    if (part.type === "output_text" || part.type === "input_text") return text(part.text);
    if (part.type === "refusal") return text(part.refusal);
    throw new InvalidRequestError(
      `${where}.content.${k}: assistant messages take output_text and refusal parts only`,
    );
  });
}

/** A user message's content: text stays a string; parts become blocks. */
function userBlocks(
  content: Message["content"],
  where: string,
  options: Pick<LowerOptions, "images" | "vision">,
): string | ContentBlockParam[] {
  if (typeof content === "string") return content;
  return resultParts(content, `${where}.content`, options);
}

/** Parts of a user message or a function call's output, as blocks. */
function resultParts(
  parts: readonly ContentPart[],
  where: string,
  options: Pick<LowerOptions, "images" | "vision">,
): ContentBlockParam[] {
  return parts.map((part, k): ContentBlockParam => {
    const at = `${where}.${k}`;
    switch (part.type) {
      case "input_text":
      case "output_text":
        return text(part.text);
      case "refusal":
        return text(part.refusal);
      case "input_audio":
        return mediaBlock("audio", part.type, at, options);
      case "input_image":
        return mediaBlock("image", part.type, at, options, part);
      case "input_file":
        return mediaBlock("document", part.type, at, options, part);
    }
  });
}

/**
 * A reasoning item's text: its `content` (what the gateway sends), else its summary, else its
 * `encrypted_content` (which the gateway fills with the same text for clients that keep only it).
 */
function reasoningText(item: Reasoning): string {
  const content = (item.content ?? []).map((part) => part.text).join("\n");
  if (content) return content;
  const summary = (item.summary ?? []).map((part) => part.text).join("\n");
  return summary || (item.encrypted_content ?? "");
}

function toolParam(tool: FunctionTool): ToolParam {
  const { name, description, parameters } = tool;
  return {
    name,
    ...(description ? { description } : {}),
    input_schema: parameters ?? NO_PARAMETERS,
  };
}
