/**
 * The `raw` export's JSON: every key of its chains and turns in snake_case, as every other answer
 * of the API, while a turn's `request` (the client's messages and tool schemas) keeps its own.
 */
import assert from "node:assert/strict";
import { ADMIN_TOKEN, startGateway } from "../_gateway.ts";

const ADMIN = { authorization: `Bearer ${ADMIN_TOKEN}` };

/** A tool whose schema has camelCase keys of its own: the client's, never renamed. */
const TOOLS = [{
  type: "function",
  function: {
    name: "read",
    description: "Read a file.",
    parameters: {
      type: "object",
      properties: { filePath: { type: "string", minLength: 1 } },
      additionalProperties: false,
    },
  },
}];

/** Every key path under `value` that is not snake_case, skipping `request` (the client's). */
function camelPaths(value: unknown, path = "$"): string[] {
  if (Array.isArray(value)) return value.flatMap((item, i) => camelPaths(item, `${path}[${i}]`));
  if (value === null || typeof value !== "object") return [];
  return Object.entries(value).flatMap(([key, inner]) => [
    ...(/^[a-z0-9_]+$/.test(key) ? [] : [`${path}.${key}`]),
    ...(key === "request" ? [] : camelPaths(inner, `${path}.${key}`)),
  ]);
}

Deno.test("the raw export names every key of its chains and turns in snake_case, and leaves the request's as sent", async () => {
  const gw = await startGateway({ script: ["It is empty."] });
  try {
    const opened = await gw.fetch("/sessions", {
      method: "POST",
      headers: ADMIN,
      body: JSON.stringify({ record_messages: true }),
    });
    const { id, token } = await opened.json();
    const messages = [{ role: "user", content: "What is in notes.txt?" }];
    const reply = await gw.fetch("/v1/chat/completions", {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "qwen3", messages, tools: TOOLS }),
    });
    assert.equal(reply.status, 200, await reply.clone().text());
    await reply.body?.cancel();

    const response = await gw.fetch(`/sessions/${id}/samples?format=raw`, { headers: ADMIN });
    assert.equal(response.status, 200);
    const raw = await response.json();
    const [chain] = raw.chains;
    assert.deepEqual(Object.keys(chain), [
      "session_id",
      "id",
      "role",
      "wiped_at",
      "parent",
      "dispatch",
      "agent_id",
      "model",
      "tools",
      "reasoning",
      "start_digest",
      "turn_count",
      "token_count",
      "message_count",
      "digest",
      "last_rid",
      "created_at",
      "updated_at",
      "turns",
    ]);
    const [turn] = chain.turns;
    assert.deepEqual(Object.keys(turn), [
      "index",
      "rid",
      "parent",
      "input_len",
      "delta_len",
      "output_len",
      "closing_len",
      "finish_reason",
      "stop_sequence",
      "flags",
      "route",
      "tool_calls",
      "masked",
      "weight_versions",
      "version_spans",
      "aborts",
      "cached_tokens",
      "starts_in_reasoning",
      "reasoning",
      "tool_names",
      "model",
      "message_count",
      "digest",
      "request_digest",
      "body_digest",
      "chunks",
      "message_chunks",
      "created_at",
      "timings",
      "request",
      "discarded",
      "tokens",
    ]);
    assert.deepEqual(Object.keys(turn.timings), [
      "render_ms",
      "engine_ms",
      "engine_reported_ms",
      "total_ms",
    ]);
    assert.deepEqual(Object.keys(turn.tokens), ["delta", "output", "logprobs", "closing"]);
    assert.deepEqual(turn.version_spans, [
      { version: "default", start: 0, end: turn.output_len },
    ]);
    assert.equal(turn.finish_reason, "end_of_turn");
    assert.deepEqual(turn.tokens.output, gw.engine.calls[0].output);
    // Nothing anywhere else is camelCase; the request is the client's, keys and all.
    assert.deepEqual(camelPaths(raw), []);
    assert.deepEqual(turn.request, { messages, tools: TOOLS });
  } finally {
    await gw.close();
  }
});
