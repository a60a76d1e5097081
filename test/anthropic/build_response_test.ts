import assert from "node:assert/strict";
import {
  buildMessage,
  type ResponseParts,
  signThinking,
  toolUseId,
  verifyThinking,
} from "../../lib/anthropic/mod.ts";

const SECRET = "secret-secret-secret-0123456789";
const USAGE = {
  input_tokens: 120,
  output_tokens: 30,
  cache_creation_input_tokens: 0,
  cache_read_input_tokens: 0,
};

function parts(overrides: Partial<ResponseParts> = {}): ResponseParts {
  return {
    rid: "r0123abcd",
    model: "qwen3-test",
    blocks: [{ type: "text", text: "Hello." }],
    finish: { kind: "end_of_turn" },
    usage: USAGE,
    sign: (thinking) => signThinking(SECRET, "sess_1", thinking),
    ...overrides,
  };
}

const CALLS = [
  { type: "tool_call" as const, name: "Bash", input: { command: "ls" } },
  { type: "tool_call" as const, name: "Read", input: { path: "a.md" } },
];

Deno.test("buildMessage() builds a text message that ends the turn", () => {
  assert.deepEqual(buildMessage(parts()), {
    id: "msg_r0123abcd",
    type: "message",
    role: "assistant",
    model: "qwen3-test",
    content: [{ type: "text", text: "Hello." }],
    stop_reason: "end_turn",
    stop_sequence: null,
    usage: USAGE,
  });
});

Deno.test("buildMessage() stops for tool_use when the turn ends with tool calls", () => {
  const message = buildMessage(parts({ blocks: [{ type: "text", text: "Looking." }, ...CALLS] }));
  assert.equal(message.stop_reason, "tool_use");
  assert.equal(message.stop_sequence, null);
  assert.deepEqual(message.content, [
    { type: "text", text: "Looking." },
    { type: "tool_use", id: toolUseId("r0123abcd", 0), name: "Bash", input: { command: "ls" } },
    { type: "tool_use", id: toolUseId("r0123abcd", 1), name: "Read", input: { path: "a.md" } },
  ]);
});

Deno.test("buildMessage() stops for max_tokens on length, tool calls or not", () => {
  assert.equal(buildMessage(parts({ finish: { kind: "length" } })).stop_reason, "max_tokens");
  assert.equal(
    buildMessage(parts({ finish: { kind: "length" }, blocks: CALLS })).stop_reason,
    "max_tokens",
  );
  assert.equal(buildMessage(parts({ finish: { kind: "length" } })).stop_sequence, null);
});

Deno.test("buildMessage() stops for stop_sequence and names the sequence", () => {
  const message = buildMessage(parts({ finish: { kind: "stop_sequence", matched: "\nHuman:" } }));
  assert.equal(message.stop_reason, "stop_sequence");
  assert.equal(message.stop_sequence, "\nHuman:");
});

Deno.test("buildMessage() signs thinking blocks with the given signer", () => {
  const message = buildMessage(
    parts({ blocks: [{ type: "thinking", thinking: "plan" }, { type: "text", text: "Done." }] }),
  );
  assert.deepEqual(message.content, [
    { type: "thinking", thinking: "plan", signature: signThinking(SECRET, "sess_1", "plan") },
    { type: "text", text: "Done." },
  ]);
  const [thinking] = message.content;
  assert.ok(
    thinking.type === "thinking" && verifyThinking(SECRET, "sess_1", "plan", thinking.signature),
  );
  const other = buildMessage(
    parts({ blocks: [{ type: "thinking", thinking: "plan" }], sign: (t) => `signed:${t}` }),
  );
  assert.deepEqual(other.content, [{
    type: "thinking",
    thinking: "plan",
    signature: "signed:plan",
  }]);
});

Deno.test("buildMessage() gives the same ids when a turn is rebuilt", () => {
  const blocks = [{ type: "thinking" as const, thinking: "p" }, ...CALLS];
  assert.deepEqual(buildMessage(parts({ blocks })), buildMessage(parts({ blocks })));
  const other = buildMessage(parts({ rid: "r9999", blocks }));
  assert.equal(other.id, "msg_r9999");
  const ids = (m: ReturnType<typeof buildMessage>) =>
    m.content.flatMap((b) => b.type === "tool_use" ? [b.id] : []);
  assert.equal(ids(other).length, 2);
  assert.notDeepEqual(ids(other), ids(buildMessage(parts({ blocks }))));
});

Deno.test("toolUseId() is deterministic, distinct per rid and index, and in Anthropic's alphabet", () => {
  const ids = ["r1", "r2"].flatMap((rid) => [0, 1, 2].map((index) => toolUseId(rid, index)));
  assert.equal(new Set(ids).size, ids.length);
  for (const id of ids) {
    assert.match(id, /^[a-zA-Z0-9_-]+$/);
    assert.ok(id.startsWith("toolu_"), id);
  }
  assert.equal(toolUseId("r1", 2), ids[2]);
});
