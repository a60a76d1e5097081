import { InvalidRequestError } from "../../lib/errors/mod.ts";
import assert from "node:assert/strict";
import {
  anthropicTurnInput,
  type MessageCreateParams,
  messageHead,
  messageIdentities,
  messageIdentity,
  type MessageParam,
  signThinking,
  startIdentity,
  toolUseId,
} from "../../lib/anthropic/mod.ts";
import type { TurnOutput } from "../../lib/session/mod.ts";

const CONTEXT = { sessionId: "sess_1", signingSecret: "secret-secret-secret-0123456789" };
const BASH = { name: "Bash", description: "Run a command.", input_schema: { type: "object" } };

function request(
  messages: MessageParam[],
  extra: Partial<MessageCreateParams> = {},
): MessageCreateParams {
  return {
    model: "qwen3-test",
    max_tokens: 512,
    system: "Be careful.",
    tools: [BASH],
    messages,
    ...extra,
  };
}

/** An assistant turn with a thinking block signed by `sessionId`. */
function thinkingTurn(sessionId: string, thinking = "List first."): MessageParam {
  return {
    role: "assistant",
    content: [
      {
        type: "thinking",
        thinking,
        signature: signThinking(CONTEXT.signingSecret, sessionId, thinking),
      },
      { type: "tool_use", id: "toolu_1", name: "Bash", input: { command: "ls" } },
    ],
  };
}

const CONVERSATION: MessageParam[] = [
  { role: "user", content: "What is here?" },
  thinkingTurn("sess_1"),
  { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_1", content: "a.txt" }] },
];

Deno.test("anthropicTurnInput() rejects an assistant prefill", () => {
  assert.throws(
    () =>
      anthropicTurnInput(
        request([{ role: "user", content: "hi" }, { role: "assistant", content: "Sure" }]),
        CONTEXT,
      ),
    (error: unknown) =>
      error instanceof InvalidRequestError &&
      error.message ===
        "messages.1: the last message must not be an assistant message (prefill is not supported)",
  );
});

Deno.test("anthropicTurnInput() presents identities, prompt and sampling of the request", () => {
  const body = request(CONVERSATION, {
    temperature: 0.6,
    top_p: 0.95,
    top_k: 20,
    stop_sequences: ["END"],
    thinking: { type: "disabled" },
  });
  const input = anthropicTurnInput(body, CONTEXT);
  const tools = [{
    type: "function",
    function: { name: "Bash", description: "Run a command.", parameters: { type: "object" } },
  }];
  assert.equal(input.sessionId, "sess_1");
  assert.equal(input.model, "qwen3-test");
  assert.equal(input.startIdentity, startIdentity("Be careful."));
  assert.deepEqual(input.messageIdentities, messageIdentities(CONVERSATION));
  assert.equal(input.lastQueryIndex, 0);
  assert.deepEqual(input.toolNames, ["Bash"]);
  assert.equal(input.enableThinking, false);
  assert.deepEqual(input.sampling, {
    maxTokens: 512,
    temperature: 0.6,
    topP: 0.95,
    topK: 20,
    stop: ["END"],
  });
  const prompt = input.prompt();
  assert.deepEqual(prompt.tools, tools);
  assert.equal(prompt.enableThinking, false);
  assert.deepEqual(prompt.messages, [
    { role: "system", content: "Be careful." },
    { role: "user", content: "What is here?" },
    {
      role: "assistant",
      content: "",
      reasoning_content: "List first.",
      tool_calls: [{
        id: "toolu_1",
        type: "function",
        function: { name: "Bash", arguments: { command: "ls" } },
      }],
    },
    { role: "tool", tool_call_id: "toolu_1", name: "Bash", content: "a.txt" },
  ]);
  assert.deepEqual(input.lower(2, ["Bash"]), prompt.messages.slice(3));
});

Deno.test("anthropicTurnInput() leaves the system message out when there is no system text", () => {
  const input = anthropicTurnInput(
    request([{ role: "user", content: "hi" }], { system: undefined, tools: undefined }),
    CONTEXT,
  );
  assert.deepEqual(input.prompt(), {
    messages: [{ role: "user", content: "hi" }],
    tools: [],
    enableThinking: undefined,
  });
  assert.deepEqual(input.toolNames, []);
});

Deno.test("anthropicTurnInput() numbers errors of lower() from the request's first message", () => {
  const messages: MessageParam[] = [
    ...CONVERSATION.slice(0, 2),
    { role: "user", content: [{ type: "image", source: { type: "base64", data: "AA==" } }] },
  ];
  const reject = { images: "reject" as const, keepAttribution: false };
  const input = anthropicTurnInput(request(messages), { ...CONTEXT, lowering: reject });
  assert.throws(
    () => input.lower(2, []),
    new InvalidRequestError(
      "messages.2.content.0: image blocks are not supported: the served model reads text only",
    ),
  );
});

Deno.test("verifyHistory() accepts thinking blocks signed for the session", () => {
  const input = anthropicTurnInput(request(CONVERSATION), CONTEXT);
  input.verifyHistory();
});

Deno.test("verifyHistory() rejects a thinking block signed for another session", () => {
  const messages = [CONVERSATION[0], thinkingTurn("sess_2"), CONVERSATION[2]];
  assert.throws(
    () => anthropicTurnInput(request(messages), CONTEXT).verifyHistory(),
    new InvalidRequestError("messages.1.content.0: Invalid `signature` in `thinking` block"),
  );
});

Deno.test("verifyHistory() rejects a modified thinking block and a made-up signature", () => {
  const modified = structuredClone(CONVERSATION);
  (modified[1].content as { thinking: string }[])[0].thinking = "List everything.";
  const madeUp: MessageParam[] = [
    ...CONVERSATION,
    {
      role: "assistant",
      content: [{ type: "text", text: "ok" }, {
        type: "thinking",
        thinking: "x",
        signature: "EqQBCkYIB",
      }],
    },
    { role: "user", content: "go on" },
  ];
  assert.throws(
    () => anthropicTurnInput(request(modified), CONTEXT).verifyHistory(),
    new InvalidRequestError("messages.1.content.0: Invalid `signature` in `thinking` block"),
  );
  assert.throws(
    () => anthropicTurnInput(request(madeUp), CONTEXT).verifyHistory(),
    new InvalidRequestError("messages.3.content.1: Invalid `signature` in `thinking` block"),
  );
});

Deno.test("reply() builds the message and the identity of that message echoed back", () => {
  const input = anthropicTurnInput(request(CONVERSATION), CONTEXT);
  const output: TurnOutput = {
    rid: "r77",
    blocks: [
      { type: "thinking", thinking: "Read it." },
      { type: "text", text: "Reading." },
      { type: "tool_call", name: "Bash", input: { command: "cat a.txt" } },
    ],
    end: { reason: "end_of_turn", stopSequence: null },
    inputTokens: 300,
    outputTokens: 25,
    outputIds: [],
    logprobs: [],
  };
  const { reply, identity } = input.reply(output);
  assert.deepEqual(reply, {
    id: "msg_r77",
    type: "message",
    role: "assistant",
    model: "qwen3-test",
    content: [
      {
        type: "thinking",
        thinking: "Read it.",
        signature: signThinking(CONTEXT.signingSecret, "sess_1", "Read it."),
      },
      { type: "text", text: "Reading." },
      { type: "tool_use", id: toolUseId("r77", 0), name: "Bash", input: { command: "cat a.txt" } },
    ],
    stop_reason: "tool_use",
    stop_sequence: null,
    usage: {
      input_tokens: 300,
      output_tokens: 25,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 0,
    },
  });
  const echoed: MessageParam = {
    role: "assistant",
    content: JSON.parse(JSON.stringify(reply.content)),
  };
  assert.equal(identity, messageIdentity(echoed));
  (echoed.content as Record<string, unknown>[]).at(-1)!.cache_control = { type: "ephemeral" };
  assert.equal(identity, messageIdentity(echoed));
  const next = anthropicTurnInput(
    request([...CONVERSATION, echoed, { role: "user", content: "ok" }]),
    CONTEXT,
  );
  assert.equal(next.messageIdentities[3], identity);
  next.verifyHistory();
});

Deno.test("reply() maps length and stop-sequence endings to Anthropic stop reasons", () => {
  const input = anthropicTurnInput(request(CONVERSATION), CONTEXT);
  const base = {
    rid: "r1",
    blocks: [{ type: "text" as const, text: "x" }],
    inputTokens: 1,
    outputTokens: 1,
    outputIds: [1],
    logprobs: [-0.5],
  };
  const length = input.reply({ ...base, end: { reason: "length", stopSequence: null } }).reply;
  assert.deepEqual([length.stop_reason, length.stop_sequence], ["max_tokens", null]);
  const stop =
    input.reply({ ...base, end: { reason: "stop_sequence", stopSequence: "END" } }).reply;
  assert.deepEqual([stop.stop_reason, stop.stop_sequence], ["stop_sequence", "END"]);
});

Deno.test("messageHead() announces an empty message with the prompt's token count", () => {
  assert.deepEqual(messageHead("r5", "qwen3-test", 42), {
    id: "msg_r5",
    type: "message",
    role: "assistant",
    model: "qwen3-test",
    content: [],
    stop_reason: "end_turn",
    stop_sequence: null,
    usage: {
      input_tokens: 42,
      output_tokens: 0,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 0,
    },
  });
});
