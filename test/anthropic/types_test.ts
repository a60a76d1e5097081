import assert from "node:assert/strict";
import { MessageCreateParams } from "../../lib/anthropic/mod.ts";

const BASE = { model: "qwen3-test", max_tokens: 1024, messages: [{ role: "user", content: "hi" }] };

/** The issue paths zod reports for `body`, or `[]` when it parses. */
function issuePaths(body: unknown): string[] {
  const result = MessageCreateParams.safeParse(body);
  return result.success ? [] : result.error.issues.map((issue) => issue.path.join("."));
}

Deno.test("MessageCreateParams.parse() accepts a minimal request", () => {
  assert.deepEqual(MessageCreateParams.parse(BASE), BASE);
});

Deno.test("MessageCreateParams.parse() rejects a request without max_tokens", () => {
  const { max_tokens: _, ...body } = BASE;
  assert.deepEqual(issuePaths(body), ["max_tokens"]);
  assert.deepEqual(issuePaths({ ...BASE, max_tokens: 1.5 }), ["max_tokens"]);
  assert.deepEqual(issuePaths({ ...BASE, max_tokens: -1 }), ["max_tokens"]);
});

Deno.test("MessageCreateParams.parse() rejects messages that are not a non-empty array", () => {
  assert.deepEqual(issuePaths({ ...BASE, messages: "hi" }), ["messages"]);
  assert.deepEqual(issuePaths({ ...BASE, messages: { role: "user", content: "hi" } }), [
    "messages",
  ]);
  assert.deepEqual(issuePaths({ ...BASE, messages: [] }), ["messages"]);
});

Deno.test("MessageCreateParams.parse() rejects an unknown content block type", () => {
  const messages = [{
    role: "user",
    content: [{ type: "text", text: "a" }, { type: "hologram", data: "x" }],
  }];
  assert.deepEqual(issuePaths({ ...BASE, messages }), ["messages.0.content"]);
  const nested = [{
    role: "user",
    content: [{
      type: "tool_result",
      tool_use_id: "t",
      content: [{ type: "thinking", thinking: "x", signature: "s" }],
    }],
  }];
  assert.notDeepEqual(issuePaths({ ...BASE, messages: nested }), []);
});

Deno.test("MessageCreateParams.parse() rejects an unknown role and a tool_use without id", () => {
  assert.deepEqual(issuePaths({ ...BASE, messages: [{ role: "tool", content: "x" }] }), [
    "messages.0.role",
  ]);
  const messages = [{
    role: "assistant",
    content: [{ type: "tool_use", id: "", name: "Bash", input: {} }],
  }];
  assert.notDeepEqual(issuePaths({ ...BASE, messages }), []);
});

Deno.test("MessageCreateParams.parse() keeps unknown top-level fields", () => {
  const body = {
    ...BASE,
    context_management: { edits: [{ type: "clear_tool_uses_20250919" }] },
    output_config: { effort: "high" },
    metadata: { user_id: "user_abc" },
    betas: ["x"],
  };
  assert.deepEqual(MessageCreateParams.parse(body), body);
});

Deno.test("MessageCreateParams.parse() accepts cache_control on system, message and tool blocks", () => {
  const cache = { type: "ephemeral", ttl: "1h" };
  const body = {
    ...BASE,
    system: [{ type: "text", text: "Be careful.", cache_control: cache }],
    tools: [{ name: "Bash", input_schema: { type: "object" }, cache_control: cache }],
    messages: [
      { role: "user", content: [{ type: "text", text: "hi", cache_control: cache }] },
      {
        role: "assistant",
        content: [{ type: "tool_use", id: "t1", name: "Bash", input: {}, cache_control: cache }],
      },
      {
        role: "user",
        content: [{
          type: "tool_result",
          tool_use_id: "t1",
          content: [{ type: "text", text: "ok", cache_control: cache }],
          cache_control: cache,
        }],
      },
    ],
  };
  assert.deepEqual(MessageCreateParams.parse(body), body);
});

Deno.test("MessageCreateParams.parse() accepts thinking adaptive, enabled and disabled only", () => {
  for (
    const thinking of [{ type: "adaptive" }, { type: "enabled", budget_tokens: 2048 }, {
      type: "disabled",
    }]
  ) {
    assert.deepEqual(issuePaths({ ...BASE, thinking }), [], thinking.type);
  }
  assert.deepEqual(issuePaths({ ...BASE, thinking: { type: "sometimes" } }), ["thinking.type"]);
});

Deno.test("MessageCreateParams.parse() accepts role system messages and server tools", () => {
  const body = {
    ...BASE,
    tools: [{ type: "web_search_20250305", name: "web_search", max_uses: 5 }],
    messages: [
      { role: "user", content: "hi" },
      { role: "system", content: "The user changed a.txt." },
      {
        role: "system",
        content: [{ type: "mid_conv_system", content: [{ type: "text", text: "note" }] }],
      },
    ],
  };
  assert.deepEqual(MessageCreateParams.parse(body), body);
});

Deno.test("MessageCreateParams.parse() checks sampling ranges", () => {
  assert.deepEqual(
    issuePaths({ ...BASE, temperature: 0, top_p: 1, top_k: -1, stop_sequences: ["END"] }),
    [],
  );
  assert.deepEqual(issuePaths({ ...BASE, temperature: 2.5 }), ["temperature"]);
  assert.deepEqual(issuePaths({ ...BASE, top_p: 0 }), ["top_p"]);
  assert.deepEqual(issuePaths({ ...BASE, stop_sequences: "END" }), ["stop_sequences"]);
});
