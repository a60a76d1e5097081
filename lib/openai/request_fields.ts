/**
 * Every field and header of a Chat Completions request that Qwen Code (and the OpenAI SDKs it
 * builds on) send, with what the gateway does with it: used, or ignored on purpose and why. A
 * test walks the requests recorded from the real CLI (`fixtures/qwen_code/episode.json`, and
 * `one_answer.json` with its memory extractor's requests, which send the same fields) and fails
 * on any field this table does not account for, so a new CLI version cannot slip one by.
 *
 * Paths name object keys with `.` and array items with `[]`. Tool schemas (`parameters`) are
 * opaque: they pass through whole.
 *
 * @module
 */
import type { FieldUse } from "../anthropic/mod.ts";

const used = (why: string): FieldUse => ({ use: "used", why });
const ignored = (why: string): FieldUse => ({ use: "ignored", why });

/** Body fields, by path. */
export const CHAT_REQUEST_FIELDS: ReadonlyMap<string, FieldUse> = new Map([
  ["model", used("echoed in the response; every model name is served by the one engine")],
  ["max_tokens", used("becomes max_new_tokens, clamped to the context left")],
  ["max_completion_tokens", used("as max_tokens, and preferred over it")],
  ["stream", used("chooses chunks or JSON")],
  ["stream_options", used("the usage chunk")],
  ["stream_options.include_usage", used("a last chunk with choices [] and the usage")],
  ["temperature", used("sampling_params.temperature")],
  ["top_p", used("sampling_params.top_p")],
  ["tools", used("rendered into the prompt by the chat template")],
  ["tools[]", used("one function tool")],
  ["tools[].type", used("must be function")],
  ["tools[].function", used("the tool")],
  ["tools[].function.name", used("rendered; a call must name an offered tool")],
  ["tools[].function.description", used("rendered")],
  ["tools[].function.parameters", used("rendered (opaque: passed through whole)")],
  ["messages", used("the conversation")],
  ["messages[]", used("one message")],
  [
    "messages[].role",
    used(
      "system first is the system prompt; user, assistant and tool are rendered; a later system message is folded into the user turn before it",
    ),
  ],
  ["messages[].content", used("a string, text parts, or null beside tool calls")],
  ["messages[].content[]", used("one part")],
  ["messages[].content[].type", used("text is rendered")],
  ["messages[].content[].text", used("rendered")],
  [
    "messages[].reasoning_content",
    used(
      "a new chain renders it as reasoning; an echo may keep or drop it (the chain keeps the reasoning as sampled)",
    ),
  ],
  ["messages[].reasoning", used("vLLM's name for reasoning_content, read the same way")],
  ["messages[].tool_calls", used("the assistant's calls")],
  ["messages[].tool_calls[]", used("one call")],
  [
    "messages[].tool_calls[].id",
    used(
      "pairs results with calls; an echo may rename ids consistently (identities name calls by position)",
    ),
  ],
  ["messages[].tool_calls[].type", used("must be function")],
  ["messages[].tool_calls[].function", used("the call")],
  ["messages[].tool_calls[].function.name", used("rendered")],
  ["messages[].tool_calls[].function.arguments", used("parsed as a JSON object and rendered")],
  ["messages[].tool_call_id", used("pairs a tool result with its call")],
]);

/** Request headers, by lower-case name; `x-stainless-*` stands for the SDK's telemetry headers. */
export const CHAT_REQUEST_HEADERS: ReadonlyMap<string, FieldUse> = new Map([
  ["authorization", used("the session token, as a bearer token")],
  ["content-type", used("the body is JSON")],
  ["accept", ignored("the response type follows the body's stream field")],
  ["accept-language", ignored("errors are in English")],
  ["sec-fetch-mode", ignored("no CORS policy applies to this gateway")],
  ["user-agent", ignored("informational")],
  ["x-stainless-*", ignored("SDK telemetry (retry count, runtime, versions)")],
]);

/**
 * The body paths and header names the tables do not account for (empty when all are).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { unaccountedChat } from "./request_fields.ts";
 * assert.deepEqual(unaccountedChat(["model", "surprise"], ["x-new"]), [
 *   "surprise",
 *   "header x-new",
 * ]);
 * ```
 */
export function unaccountedChat(paths: Iterable<string>, headers: Iterable<string>): string[] {
  return unaccountedIn(CHAT_REQUEST_FIELDS, CHAT_REQUEST_HEADERS, paths, headers);
}

/**
 * The body paths and header names that `fields` and `headerTable` do not account for; every
 * `x-stainless-*` header (the OpenAI SDKs' telemetry) is looked up as that one name.
 */
export function unaccountedIn(
  fields: ReadonlyMap<string, FieldUse>,
  headerTable: ReadonlyMap<string, FieldUse>,
  paths: Iterable<string>,
  headers: Iterable<string>,
): string[] {
  const out: string[] = [];
  for (const path of paths) if (!fields.has(path)) out.push(path);
  for (const header of headers) {
    const name = header.toLowerCase();
    const key = name.startsWith("x-stainless-") ? "x-stainless-*" : name;
    if (!headerTable.has(key)) out.push(`header ${name}`);
  }
  return out;
}
