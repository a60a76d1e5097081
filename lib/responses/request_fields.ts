/**
 * Every field and header of a Responses API request that Codex sends, with what the gateway does
 * with it: used, or ignored on purpose and why. A test walks the requests recorded from the real
 * CLI (`fixtures/codex/episode.json`, and `subagent.json` with `[agents]` on: its namespaced
 * sub-agent tools and its sub-agent's requests) and fails on any field this table does not
 * account for, so a new CLI version cannot slip one by.
 *
 * Paths name object keys with `.` and array items with `[]`. Tool schemas (`parameters`) are
 * opaque: they pass through whole.
 *
 * @module
 */
import type { FieldUse } from "../anthropic/mod.ts";
import { unaccountedIn } from "../openai/mod.ts";

const used = (why: string): FieldUse => ({ use: "used", why });
const ignored = (why: string): FieldUse => ({ use: "ignored", why });

/** Body fields, by path. */
export const RESPONSES_REQUEST_FIELDS: ReadonlyMap<string, FieldUse> = new Map([
  ["model", used("echoed in the response; every model name is served by the one engine")],
  ["stream", used("chooses events or JSON")],
  ["store", used("echoed; nothing is stored either way")],
  ["include", used("asks for the reasoning as encrypted_content")],
  ["include[]", used("reasoning.encrypted_content fills that field with the reasoning text")],
  ["tool_choice", used("validated (a named function must be offered), not enforced")],
  ["parallel_tool_calls", used("echoed; the model may call several tools in one reply")],
  ["reasoning", used("echoed; the chat template decides whether the model thinks")],
  ["reasoning.effort", used("echoed")],
  ["reasoning.summary", used("echoed; the reasoning is sent whole, not summarised")],
  [
    "prompt_cache_key",
    ignored("the chain's own tokens are the cache: a turn renders only its new messages"),
  ],
  [
    "client_metadata",
    ignored("Codex's thread, turn and window ids; the session token names the session"),
  ],
  ["client_metadata.root_turn_id", ignored("Codex's own bookkeeping")],
  ["client_metadata.session_id", ignored("Codex's own bookkeeping")],
  ["client_metadata.thread_id", ignored("Codex's own bookkeeping")],
  ["client_metadata.turn_id", ignored("Codex's own bookkeeping")],
  ["client_metadata.x-codex-installation-id", ignored("identifies the CLI install")],
  ["client_metadata.x-codex-turn-metadata", ignored("Codex's own bookkeeping")],
  ["client_metadata.x-codex-window-id", ignored("Codex's own bookkeeping")],
  ["client_metadata.parent_turn_id", ignored("Codex's own bookkeeping (a sub-agent's)")],
  [
    "client_metadata.x-codex-parent-thread-id",
    ignored("the header of the same name is read: it names a sub-agent's parent"),
  ],
  ["client_metadata.x-openai-subagent", ignored("what kind of sub-agent Codex runs")],
  ["tools", used("function tools are rendered by the chat template")],
  ["tools[]", used("one tool")],
  ["tools[].type", used("function is rendered; built-in tools are not shown to the model")],
  ["tools[].name", used("rendered; a call must name an offered tool")],
  ["tools[].description", used("rendered")],
  ["tools[].parameters", used("rendered (opaque: passed through whole)")],
  ["tools[].strict", ignored("no constrained decoding: the model's arguments are what it wrote")],
  [
    "tools[].tools",
    used(
      "a namespace's functions, shown by their plain names (lib/responses/offered_functions.ts)",
    ),
  ],
  ["tools[].tools[]", used("one function of the namespace")],
  ["tools[].tools[].type", used("function is shown; others are not")],
  ["tools[].tools[].name", used("rendered; a call of it is answered with the namespace's name")],
  ["tools[].tools[].description", used("rendered")],
  ["tools[].tools[].parameters", used("rendered (opaque: passed through whole)")],
  [
    "tools[].tools[].strict",
    ignored("no constrained decoding: the model's arguments are what it wrote"),
  ],
  ["input", used("the conversation")],
  ["input[]", used("one item")],
  [
    "input[].type",
    used(
      "message, reasoning, function_call and function_call_output are read; others are refused",
    ),
  ],
  [
    "input[].role",
    used(
      "leading developer messages are the system prompt; user and assistant are rendered; a later developer message is folded into the user turn before it",
    ),
  ],
  ["input[].id", ignored("item ids: echoes are recognised by what they say")],
  ["input[].status", ignored("every echoed item is complete")],
  ["input[].content", used("a message's parts; a reasoning item's text")],
  ["input[].content[]", used("one part")],
  ["input[].content[].type", used("input_text, output_text and reasoning_text are rendered")],
  ["input[].content[].text", used("rendered")],
  ["input[].summary", used("a reasoning item's text when it has no content")],
  [
    "input[].encrypted_content",
    used("a reasoning item's text when it has neither content nor summary"),
  ],
  ["input[].call_id", used("pairs an output with its call; an echo may rename them consistently")],
  ["input[].name", used("the called tool, rendered")],
  [
    "input[].namespace",
    ignored("a namespaced call is rendered by its plain name, as the model called it"),
  ],
  ["input[].arguments", used("parsed as a JSON object and rendered")],
  ["input[].output", used("the tool's result, rendered")],
]);

/** Request headers, by lower-case name; `x-stainless-*` stands for the SDK's telemetry headers. */
export const RESPONSES_REQUEST_HEADERS: ReadonlyMap<string, FieldUse> = new Map([
  ["authorization", used("the session token, as a bearer token")],
  ["content-type", used("the body is JSON")],
  ["accept", ignored("the response type follows the body's stream field")],
  ["user-agent", ignored("informational")],
  ["originator", ignored("names the client (codex_exec)")],
  ["session-id", ignored("Codex's thread id; the session token names the session")],
  [
    "thread-id",
    used("Codex's thread id: a sub-agent's, when the parent header is sent, names its chain"),
  ],
  ["x-codex-parent-thread-id", used("a sub-agent's parent thread: its requests are its own chain")],
  ["x-openai-subagent", ignored("what kind of sub-agent Codex runs (collab_spawn)")],
  ["x-client-request-id", ignored("Codex's thread id")],
  ["x-codex-beta-features", ignored("features Codex would use with OpenAI's own servers")],
  ["x-codex-turn-metadata", ignored("Codex's own bookkeeping")],
  ["x-codex-window-id", ignored("Codex's own bookkeeping")],
  ["x-stainless-*", ignored("SDK telemetry (retry count, runtime, versions)")],
]);

/**
 * The body paths and header names the tables do not account for (empty when all are).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { unaccountedResponses } from "./request_fields.ts";
 * assert.deepEqual(unaccountedResponses(["model", "surprise"], ["x-new"]), [
 *   "surprise",
 *   "header x-new",
 * ]);
 * ```
 */
export function unaccountedResponses(
  paths: Iterable<string>,
  headers: Iterable<string>,
): string[] {
  return unaccountedIn(RESPONSES_REQUEST_FIELDS, RESPONSES_REQUEST_HEADERS, paths, headers);
}
