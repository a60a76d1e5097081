import assert from "node:assert/strict";
import {
  messageIdentities,
  messageIdentity,
  type MessageParam,
  settingsDigest,
  stableJson,
  startIdentity,
} from "../../lib/anthropic/mod.ts";
import { RecurringFields, recurringToken } from "../../lib/cache/mod.ts";

const EPHEMERAL = { type: "ephemeral" as const };

Deno.test("stableJson() sorts object keys at every depth", () => {
  assert.equal(
    stableJson({ b: 1, a: { d: [{ z: 1, y: 2 }], c: "x" } }),
    '{"a":{"c":"x","d":[{"y":2,"z":1}]},"b":1}',
  );
});

Deno.test("stableJson() matches JSON.stringify for scalars, arrays and escapes", () => {
  for (const value of [null, true, 0, -1.5, 'a"b\n\u2028🎉', [], [1, "x", null], {}]) {
    assert.equal(stableJson(value), JSON.stringify(value));
  }
  assert.equal(stableJson({ a: undefined, b: 1 }), '{"b":1}');
  assert.equal(stableJson([undefined]), "[null]");
});

Deno.test("messageIdentity() treats string content as one text block", () => {
  assert.equal(
    messageIdentity({ role: "user", content: "hi" }),
    messageIdentity({ role: "user", content: [{ type: "text", text: "hi" }] }),
  );
});

Deno.test("messageIdentity() ignores cache_control on every kind of block", () => {
  const plain: MessageParam[] = [
    {
      role: "user",
      content: [
        { type: "tool_result", tool_use_id: "t1", content: [{ type: "text", text: "out" }] },
        { type: "text", text: "next" },
        { type: "image", source: { type: "base64", data: "AA==" } },
      ],
    },
    {
      role: "assistant",
      content: [
        { type: "thinking", thinking: "plan", signature: "sig" },
        { type: "text", text: "ok" },
        { type: "tool_use", id: "t2", name: "Bash", input: { command: "ls" } },
      ],
    },
  ];
  const marked = structuredClone(plain);
  for (const message of marked) {
    for (const block of message.content as Record<string, unknown>[]) {
      block.cache_control = EPHEMERAL;
      if (Array.isArray(block.content)) {
        for (const inner of block.content) inner.cache_control = EPHEMERAL;
      }
    }
  }
  plain.forEach((message, i) => assert.equal(messageIdentity(marked[i]), messageIdentity(message)));
});

Deno.test("messageIdentity() treats a tool_result's string content as one text block", () => {
  assert.equal(
    messageIdentity({
      role: "user",
      content: [{ type: "tool_result", tool_use_id: "t", content: "out" }],
    }),
    messageIdentity({
      role: "user",
      content: [{
        type: "tool_result",
        tool_use_id: "t",
        content: [{ type: "text", text: "out" }],
        is_error: false,
      }],
    }),
  );
});

Deno.test("messageIdentity() ignores key order in blocks and tool input", () => {
  assert.equal(
    messageIdentity({
      role: "assistant",
      content: [{
        type: "tool_use",
        id: "t",
        name: "Read",
        input: { path: "a", limit: 1, opts: { x: 1, y: 2 } },
      }],
    }),
    messageIdentity({
      content: [{
        input: { opts: { y: 2, x: 1 }, limit: 1, path: "a" },
        name: "Read",
        id: "t",
        type: "tool_use",
      }],
      role: "assistant",
    } as MessageParam),
  );
});

Deno.test("messageIdentity() differs when what the message says differs", () => {
  const base = messageIdentity({ role: "user", content: "hi" });
  assert.notEqual(messageIdentity({ role: "user", content: "hi!" }), base);
  assert.notEqual(messageIdentity({ role: "assistant", content: "hi" }), base);
  assert.notEqual(
    messageIdentity({
      role: "user",
      content: [{ type: "text", text: "h" }, { type: "text", text: "i" }],
    }),
    base,
  );
  const result = (is_error: boolean) =>
    messageIdentity({
      role: "user",
      content: [{ type: "tool_result", tool_use_id: "t", content: "x", is_error }],
    });
  assert.notEqual(result(true), result(false));
  const call = (input: Record<string, unknown>) =>
    messageIdentity({
      role: "assistant",
      content: [{ type: "tool_use", id: "t", name: "Bash", input }],
    });
  assert.notEqual(call({ command: "ls" }), call({ command: "ls -la" }));
});

Deno.test("messageIdentity() ignores fields of a text block other than its text", () => {
  assert.equal(
    messageIdentity({ role: "user", content: [{ type: "text", text: "hi", citations: null }] }),
    messageIdentity({ role: "user", content: "hi" }),
  );
});

Deno.test({
  name:
    "messageIdentity() ignores cache_control on text nested in mid_conv_system and search_result",
  fn() {
    const blocks = (marker: Record<string, unknown>) => [
      {
        type: "mid_conv_system" as const,
        content: [{ type: "text" as const, text: "note", ...marker }],
      },
      {
        type: "search_result" as const,
        source: "s",
        title: "t",
        content: [{ type: "text", text: "r", ...marker }],
      },
    ];
    for (const i of [0, 1]) {
      assert.equal(
        messageIdentity({ role: "user", content: [blocks({ cache_control: EPHEMERAL })[i]] }),
        messageIdentity({ role: "user", content: [blocks({})[i]] }),
      );
    }
  },
});

Deno.test("startIdentity() depends on the system text only", () => {
  const base = startIdentity("Be careful.");
  assert.equal(startIdentity("Be careful."), base);
  assert.notEqual(startIdentity("Be bold."), base);
  assert.notEqual(startIdentity(""), base);
});

/** A recorded reply as the gateway returned it, and the user's answer to its tool call. */
const REPLY: MessageParam = {
  role: "assistant",
  content: [
    { type: "thinking", thinking: "Look first.", signature: "sig" },
    { type: "text", text: "Listing the files.\n" },
    { type: "tool_use", id: "toolu_A", name: "Bash", input: { command: "ls", timeout: 5 } },
  ],
};
const ANSWER: MessageParam = {
  role: "user",
  content: [{ type: "tool_result", tool_use_id: "toolu_A", content: "a.txt" }],
};
const ASK: MessageParam = { role: "user", content: "What is here?" };

Deno.test("messageIdentities() recognise the echoes clients commonly rewrite", () => {
  const recorded = messageIdentities([ASK, REPLY, ANSWER]);
  const echoes: Record<string, MessageParam> = {
    "reasoning dropped": {
      role: "assistant",
      content: [
        { type: "text", text: "Listing the files.\n" },
        { type: "tool_use", id: "toolu_A", name: "Bash", input: { command: "ls", timeout: 5 } },
      ],
    },
    "whitespace at the edges trimmed, added, or runs collapsed": {
      role: "assistant",
      content: [
        { type: "text", text: "  Listing   the files." },
        { type: "tool_use", id: "toolu_A", name: "Bash", input: { timeout: 5, command: "ls" } },
      ],
    },
    "an empty text block added and the text split": {
      role: "assistant",
      content: [
        { type: "text", text: "" },
        { type: "text", text: "Listing" },
        { type: "text", text: "the files." },
        { type: "tool_use", id: "toolu_A", name: "Bash", input: { command: "ls", timeout: 5 } },
      ],
    },
  };
  for (const [name, echo] of Object.entries(echoes)) {
    assert.deepEqual(messageIdentities([ASK, echo, ANSWER]), recorded, name);
  }
  const renamed = messageIdentities([
    ASK,
    {
      role: "assistant",
      content: [
        { type: "text", text: "Listing the files." },
        { type: "tool_use", id: "call_0", name: "Bash", input: { command: "ls", timeout: 5 } },
      ],
    },
    { role: "user", content: [{ type: "tool_result", tool_use_id: "call_0", content: "a.txt" }] },
  ]);
  assert.deepEqual(renamed, recorded, "tool-call ids rewritten consistently");
});

Deno.test("messageIdentities() tell apart echoes that say something else", () => {
  const recorded = messageIdentities([ASK, REPLY, ANSWER]);
  const differ = (messages: MessageParam[], why: string) =>
    assert.notDeepEqual(messageIdentities(messages), recorded, why);
  differ([ASK, { role: "assistant", content: "Listing the files." }, ANSWER], "the call dropped");
  differ([
    ASK,
    {
      role: "assistant",
      content: [
        { type: "text", text: "Listing all the files." },
        { type: "tool_use", id: "toolu_A", name: "Bash", input: { command: "ls", timeout: 5 } },
      ],
    },
    ANSWER,
  ], "edited text");
  differ([ASK, REPLY, {
    role: "user",
    content: [{ type: "tool_result", tool_use_id: "toolu_B", content: "a.txt" }],
  }], "a result naming a call that was not made");
  assert.notEqual(
    messageIdentity({ role: "assistant", content: "a b" }),
    messageIdentity({ role: "assistant", content: "ab" }),
    "whitespace between words is kept as one space",
  );
  assert.equal(
    messageIdentity({ role: "assistant", content: "" }),
    messageIdentity({ role: "assistant", content: [] }),
    "no text is no text, however sent",
  );
});

Deno.test("messageIdentities() name a tool result's call by position, across messages", () => {
  const two: MessageParam = {
    role: "assistant",
    content: [
      { type: "tool_use", id: "x1", name: "Read", input: { path: "a" } },
      { type: "tool_use", id: "x2", name: "Read", input: { path: "b" } },
    ],
  };
  const results = (first: string, second: string): MessageParam => ({
    role: "user",
    content: [
      { type: "tool_result", tool_use_id: first, content: "A" },
      { type: "tool_result", tool_use_id: second, content: "B" },
    ],
  });
  const swapped = messageIdentities([ASK, two, results("x2", "x1")]);
  assert.notDeepEqual(messageIdentities([ASK, two, results("x1", "x2")]), swapped);
  const renamed: MessageParam = {
    role: "assistant",
    content: [
      { type: "tool_use", id: "y1", name: "Read", input: { path: "a" } },
      { type: "tool_use", id: "y2", name: "Read", input: { path: "b" } },
    ],
  };
  assert.deepEqual(messageIdentities([ASK, renamed, results("y2", "y1")]), swapped);
});

Deno.test("settingsDigest() of held tools is the digest of the same tools parsed afresh, byte for byte", () => {
  const memo = new RecurringFields({
    capacityBytes: 1 << 22,
    minChars: 16,
    maxValues: 4,
    accepts: () => true,
  });
  const tools = Array.from({ length: 3 }, (_, i) => ({
    name: `tool_${i}`,
    input_schema: { type: "object", properties: { b: { type: "string" }, a: { type: "number" } } },
  }));
  const text = (n: number) => JSON.stringify({ model: "m", tools, messages: Array(n).fill("hi") });
  memo.parse(text(1), ["tools"]);
  const held = (memo.parse(text(2), ["tools"]).value as { tools: unknown }).tools;
  assert.ok(recurringToken(held));
  const heldDigest = settingsDigest({ model: "m", max_tokens: 8, tools: held });
  // Looked up by token the second time: the same digest.
  assert.equal(settingsDigest({ model: "m", max_tokens: 8, tools: held }), heldDigest);
  assert.equal(
    settingsDigest({ max_tokens: 8, model: "m", tools: structuredClone(tools) }),
    heldDigest,
  );
  assert.notEqual(settingsDigest({ model: "m", max_tokens: 9, tools: held }), heldDigest);
  assert.notEqual(settingsDigest({ model: "m", max_tokens: 8, tools: tools.slice(1) }), heldDigest);
  // A field absent and a field null are told apart, as their JSON does.
  const absent = settingsDigest({ model: "m", max_tokens: 8, top_k: undefined, tools: held });
  assert.equal(absent, heldDigest);
  assert.notEqual(settingsDigest({ model: "m", max_tokens: 8, top_k: null, tools: held }), absent);
});
