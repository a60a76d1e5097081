/**
 * Every field and header of a Messages request that Claude Code (and the Anthropic SDKs) send,
 * with what the gateway does with it: used, or ignored on purpose and why. A test walks the
 * requests recorded from the real CLI (`fixtures/claude_code/episode.json`) and fails on any
 * field this table does not account for, so a new CLI version cannot slip a field past us.
 *
 * Paths name object keys with `.` and array items with `[]`. Values under `input` and
 * `input_schema` are opaque: tool arguments and tool schemas pass through whole.
 *
 * @module
 */

/** What the gateway does with a field. */
export interface FieldUse {
  readonly use: "used" | "ignored";
  readonly why: string;
}

const used = (why: string): FieldUse => ({ use: "used", why });
const ignored = (why: string): FieldUse => ({ use: "ignored", why });

const CACHE_CONTROL = ignored(
  "prompt caching is the engine's radix cache; the markers move every request, so they are not part of a message's identity",
);

/** Body fields, by path. */
export const REQUEST_FIELDS: Readonly<Record<string, FieldUse>> = {
  model: used("echoed in the response; every model name is served by the one configured engine"),
  max_tokens: used("becomes max_new_tokens, clamped to the context left"),
  stream: used("chooses SSE or JSON"),
  temperature: used("sampling_params.temperature"),
  top_p: used("sampling_params.top_p"),
  top_k: used("sampling_params.top_k"),
  stop_sequences: used("sampling_params.stop; a match ends the turn as stop_sequence"),
  tool_choice: ignored(
    "accepted and validated, not enforced: forcing a tool needs constrained decoding",
  ),
  "tool_choice.type": ignored("see tool_choice"),
  "tool_choice.name": ignored("see tool_choice"),
  "tool_choice.disable_parallel_tool_use": ignored("see tool_choice"),
  system: used("the system prompt, blocks joined by newlines"),
  "system[]": used("one text block of the system prompt"),
  "system[].type": used("must be text"),
  "system[].text": used(
    "rendered, except Claude Code's x-anthropic-billing-header line (KEEP_ATTRIBUTION)",
  ),
  "system[].cache_control": CACHE_CONTROL,
  "system[].cache_control.type": CACHE_CONTROL,
  "system[].cache_control.ttl": CACHE_CONTROL,
  tools: used("rendered into the prompt by the chat template"),
  "tools[]": used("one tool"),
  "tools[].name": used("rendered; a tool call must name one of them"),
  "tools[].description": used("rendered"),
  "tools[].input_schema": used("rendered as the function's parameters"),
  "tools[].type": ignored("custom tools are rendered; server tools (no input_schema) are dropped"),
  "tools[].defer_loading": ignored(
    "every tool is rendered into the prompt: an open model has no deferred tool loading",
  ),
  "tools[].eager_input_streaming": ignored("tool input is always sent whole, in input_json_delta"),
  "tools[].strict": ignored("the output is parsed, not constrained"),
  "tools[].cache_control": CACHE_CONTROL,
  "tools[].cache_control.type": CACHE_CONTROL,
  messages: used("the conversation"),
  "messages[]": used("one message"),
  "messages[].role": used(
    "user and assistant messages are rendered; a system message is folded into the user turn before it as a <system-reminder>",
  ),
  "messages[].content": used("a string, or blocks"),
  "messages[].content[]": used("one block"),
  "messages[].content[].type": used("text, thinking, tool_use and tool_result are rendered"),
  "messages[].content[].text": used("rendered"),
  "messages[].content[].thinking": used(
    "a new chain renders it as reasoning_content; an echo may drop it (the chain keeps the reasoning as sampled)",
  ),
  "messages[].content[].signature": used(
    "checked when history the gateway did not record starts a chain",
  ),
  "messages[].content[].id": used(
    "tool_use id: pairs results with calls; an echo may rename ids consistently",
  ),
  "messages[].content[].name": used("tool_use name"),
  "messages[].content[].input": used("tool_use arguments"),
  "messages[].content[].tool_use_id": used(
    "pairs a tool result with its call, which identities name by position",
  ),
  "messages[].content[].content": used("tool result content, a string or text blocks"),
  "messages[].content[].is_error": used(
    "an error result reaches the model prefixed with 'Error: '",
  ),
  "messages[].content[].cache_control": CACHE_CONTROL,
  "messages[].content[].cache_control.type": CACHE_CONTROL,
  "messages[].content[].cache_control.ttl": CACHE_CONTROL,
  "messages[].content[].content[]": used("one block of a tool result's content"),
  "messages[].content[].content[].type": used(
    "text is rendered; tool_reference as the tool's name",
  ),
  "messages[].content[].content[].text": used("rendered"),
  "messages[].content[].content[].tool_name": used("a loaded tool's name (ToolSearch results)"),
  "messages[].content[].content[].cache_control": CACHE_CONTROL,
  "messages[].content[].content[].cache_control.type": CACHE_CONTROL,
  thinking: used("the template's reasoning switch"),
  "thinking.type": used("disabled turns reasoning off; enabled and adaptive leave it on"),
  "thinking.budget_tokens": ignored("the model decides how long it reasons; max_tokens bounds it"),
  "thinking.display": ignored("thinking is always returned in full, as sampled"),
  metadata: ignored("sessions are identified by their token, not by a client-chosen user id"),
  "metadata.user_id": ignored("see metadata"),
  context_management: ignored(
    "server-side context edits (clearing old thinking or tool uses) would rewrite history; the gateway renders the conversation as sent",
  ),
  "context_management.edits": ignored("see context_management"),
  "context_management.edits[]": ignored("see context_management"),
  "context_management.edits[].type": ignored("see context_management"),
  "context_management.edits[].keep": ignored("see context_management"),
  output_config: ignored("effort levels have no counterpart in SGLang's sampling parameters"),
  "output_config.effort": ignored("see output_config"),
  service_tier: ignored("one engine, one tier"),
};

/** Request headers, by lower-case name; `x-stainless-*` stands for the SDK's telemetry headers. */
export const REQUEST_HEADERS: Readonly<Record<string, FieldUse>> = {
  authorization: used("the session token, as a bearer token"),
  "x-api-key": used("the session token"),
  "content-type": used("the body is JSON"),
  accept: ignored("the response type follows the body's stream field"),
  "anthropic-version": ignored("one API version is served"),
  "anthropic-beta": ignored("beta features are accepted as far as their body fields go"),
  "anthropic-dangerous-direct-browser-access": ignored("no CORS policy applies to this gateway"),
  "user-agent": ignored("informational"),
  "x-app": ignored("informational"),
  "x-claude-code-agent-id": used("routes a sub-agent's requests to its own chain"),
  "x-claude-code-parent-agent-id": used("a nested sub-agent's parent chain"),
  "x-claude-code-session-id": ignored(
    "the session comes from the token; the header names Claude Code's own conversation",
  ),
  "x-stainless-*": ignored("SDK telemetry (retry count, timeout, runtime)"),
};

/** The body paths and header names the tables do not account for (empty when all are). */
export function unaccounted(paths: Iterable<string>, headers: Iterable<string>): string[] {
  const out: string[] = [];
  for (const path of paths) if (!Object.hasOwn(REQUEST_FIELDS, path)) out.push(path);
  for (const header of headers) {
    const name = header.toLowerCase();
    const key = name.startsWith("x-stainless-") ? "x-stainless-*" : name;
    if (!Object.hasOwn(REQUEST_HEADERS, key)) out.push(`header ${name}`);
  }
  return out;
}

/**
 * Every field path of a request body (`messages[].content[].type` style); values under an
 * `opaque` key (tool arguments and schemas) are not entered.
 */
export function fieldPaths(
  body: unknown,
  opaque: readonly string[] = ["input", "input_schema"],
): Set<string> {
  const paths = new Set<string>();
  const walk = (value: unknown, path: string) => {
    if (path) paths.add(path);
    const last = path.slice(path.lastIndexOf(".") + 1);
    if (opaque.includes(last)) return;
    if (Array.isArray(value)) value.forEach((item) => walk(item, `${path}[]`));
    else if (value !== null && typeof value === "object") {
      for (const [key, item] of Object.entries(value)) walk(item, path ? `${path}.${key}` : key);
    }
  };
  walk(body, "");
  return paths;
}
