import assert from "node:assert/strict";
import type { ChatMessage, ChatTool } from "../../lib/chat/mod.ts";
import type { ChatTokenizer } from "../../lib/tokenizer/mod.ts";
import {
  opensReasoning,
  renderDelta,
  renderPrompt,
  TemplateError,
} from "../../lib/template/mod.ts";
import { qwen3 } from "../_gateway.ts";

const TOOLS: ChatTool[] = [
  {
    type: "function",
    function: {
      name: "Bash",
      description: "Run a shell command.",
      parameters: {
        type: "object",
        properties: { command: { type: "string" } },
        required: ["command"],
      },
    },
  },
  {
    type: "function",
    function: {
      name: "Read",
      description: "Read a file.",
      parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
    },
  },
];

/** A conversation that ends with an assistant turn calling two tools. */
const HISTORY: ChatMessage[] = [
  { role: "system", content: "You are a careful coding agent." },
  { role: "user", content: "What is in this repository? Résumé 世界 🎉" },
  {
    role: "assistant",
    content: "Listing first.",
    reasoning_content: "I should list the files.",
    tool_calls: [{
      id: "toolu_1",
      type: "function",
      function: { name: "Bash", arguments: { command: "ls" } },
    }],
  },
  { role: "tool", tool_call_id: "toolu_1", content: "README.md\nsrc" },
  {
    role: "assistant",
    content: "",
    reasoning_content: "Read the README and look into src.",
    tool_calls: [
      {
        id: "toolu_2",
        type: "function",
        function: { name: "Read", arguments: { path: "README.md" } },
      },
      {
        id: "toolu_3",
        type: "function",
        function: { name: "Bash", arguments: { command: "ls src" } },
      },
    ],
  },
];

/** The tool results that answer the last turn of {@linkcode HISTORY}. */
const RESULTS: ChatMessage[] = [
  { role: "tool", tool_call_id: "toolu_2", content: "# Demo\n\nA demo project. 🎉" },
  { role: "tool", tool_call_id: "toolu_3", content: "Error: ls: cannot access 'src'" },
];

/**
 * Renders `history ++ news` whole and checks that its tokens are the tokens of everything up to
 * the last assistant's end-of-turn token followed by exactly the delta's tokens.
 */
function assertDeltaIsSuffix(
  tok: ChatTokenizer,
  history: ChatMessage[],
  news: ChatMessage[],
  enableThinking?: boolean,
) {
  const fullText = tok.render(
    { messages: [...history, ...news], tools: TOOLS, enableThinking },
    true,
  );
  const delta = renderDelta(tok, news, enableThinking);
  assert.ok(fullText.endsWith(delta.text), delta.text);
  const head = fullText.slice(0, fullText.length - delta.text.length);
  const lastTurn = fullText.lastIndexOf("<|im_start|>assistant\n", head.length);
  assert.equal(head.indexOf("<|im_end|>", lastTurn), head.length - "<|im_end|>".length, head);
  assert.deepEqual(tok.encode(fullText), [...tok.encode(head), ...delta.tokens]);
  assert.deepEqual(delta.tokens, tok.encode(delta.text));
  return delta;
}

Deno.test("renderDelta() of tool results equals the suffix of the full rendering", async () => {
  const tok = await qwen3();
  const delta = assertDeltaIsSuffix(tok, HISTORY, RESULTS);
  assert.ok(delta.text.startsWith("\n<|im_start|>user\n<tool_response>\n# Demo"), delta.text);
});

Deno.test("renderDelta() of user text equals the suffix of the full rendering", async () => {
  const tok = await qwen3();
  const history: ChatMessage[] = [...HISTORY, ...RESULTS, {
    role: "assistant",
    content: "It is a demo.",
  }];
  const delta = assertDeltaIsSuffix(tok, history, [{
    role: "user",
    content: "Thanks! Now count the files.",
  }]);
  assert.equal(
    delta.text,
    "\n<|im_start|>user\nThanks! Now count the files.<|im_end|>\n<|im_start|>assistant\n",
  );
});

Deno.test("renderDelta() of a system-reminder mid-conversation equals the suffix of the full rendering", async () => {
  const tok = await qwen3();
  assertDeltaIsSuffix(tok, HISTORY, [
    ...RESULTS,
    {
      role: "user",
      content: "Go on.\n<system-reminder>\nThe user changed README.md.\n</system-reminder>",
    },
  ]);
});

Deno.test("renderDelta() with thinking disabled equals the suffix of the full rendering", async () => {
  const tok = await qwen3();
  const delta = assertDeltaIsSuffix(tok, HISTORY, [
    ...RESULTS,
    { role: "user", content: "Answer without thinking." },
  ], false);
  assert.ok(delta.text.endsWith("<|im_start|>assistant\n<think>\n\n</think>\n\n"), delta.text);
});

Deno.test("renderDelta() starts with the turn separator after the end-of-turn token", async () => {
  const tok = await qwen3();
  const delta = renderDelta(tok, [{ role: "tool", content: "file.txt" }]);
  const text =
    "\n<|im_start|>user\n<tool_response>\nfile.txt\n</tool_response><|im_end|>\n<|im_start|>assistant\n";
  assert.equal(delta.text, text);
  assert.deepEqual(delta.tokens, tok.encode(text));
  assert.deepEqual(delta.tokens.slice(0, 2), tok.encode("\n<|im_start|>"));
});

Deno.test("renderDelta() groups consecutive tool results into one user block", async () => {
  const tok = await qwen3();
  const delta = renderDelta(tok, [
    { role: "tool", tool_call_id: "a", content: "one" },
    { role: "tool", tool_call_id: "b", content: "two" },
    { role: "tool", tool_call_id: "c", content: "three" },
  ]);
  assert.equal(
    delta.text,
    "\n<|im_start|>user\n<tool_response>\none\n</tool_response>\n<tool_response>\ntwo\n</tool_response>\n" +
      "<tool_response>\nthree\n</tool_response><|im_end|>\n<|im_start|>assistant\n",
  );
  assert.deepEqual(delta.tokens, tok.encode(delta.text));
});

Deno.test("renderDelta() ends with the assistant header after a tool result and user text", async () => {
  const tok = await qwen3();
  const delta = renderDelta(tok, [{ role: "tool", content: "ok" }, {
    role: "user",
    content: "next",
  }]);
  assert.equal(
    delta.text,
    "\n<|im_start|>user\n<tool_response>\nok\n</tool_response><|im_end|>\n<|im_start|>user\nnext<|im_end|>\n" +
      "<|im_start|>assistant\n",
  );
  assert.deepEqual(delta.tokens, tok.encode(delta.text));
});

Deno.test("renderDelta() throws TemplateError when no closer ends the assistant turn", async () => {
  const tok = await qwen3();
  const other: ChatTokenizer = {
    ...tok,
    ending: { ...tok.ending, closers: ["<|endoftext|>", "<|fim_pad|>"] },
  };
  assert.throws(
    () => renderDelta(other, [{ role: "user", content: "hi" }]),
    (error: unknown) =>
      error instanceof TemplateError &&
      error.message ===
        'Cannot render a delta: the chat template does not end an assistant turn with "<|endoftext|>" or "<|fim_pad|>"',
  );
});

Deno.test("renderDelta() throws TemplateError when the cut falls inside a token", async () => {
  const tok = await qwen3();
  const other: ChatTokenizer = {
    ...tok,
    ending: { ...tok.ending, closers: ["<|im_end|>\n<|im_start|>us"] },
  };
  assert.throws(
    () => renderDelta(other, [{ role: "user", content: "hi" }]),
    (error: unknown) =>
      error instanceof TemplateError &&
      error.message ===
        "Cannot render a delta: the tokens after the end-of-turn token merge with it",
  );
});

Deno.test("renderPrompt() tokens are the encoding of the template's text with the header", async () => {
  const tok = await qwen3();
  const prompt = { messages: HISTORY.slice(0, 2), tools: TOOLS };
  const rendered = renderPrompt(tok, prompt);
  assert.equal(rendered.text, tok.render(prompt, true));
  assert.ok(rendered.text.endsWith("<|im_end|>\n<|im_start|>assistant\n"));
  assert.deepEqual(rendered.tokens, tok.encode(rendered.text));
});

Deno.test("opensReasoning() is true only when the prompt ends inside an open <think>", () => {
  assert.equal(opensReasoning("<|im_start|>assistant\n<think>\n"), true);
  assert.equal(opensReasoning("<|im_start|>assistant\n<think>"), true);
  assert.equal(opensReasoning("<|im_start|>assistant\n<think>\n\n  "), true);
  assert.equal(opensReasoning("<|im_start|>assistant\n"), false);
  assert.equal(opensReasoning("<|im_start|>assistant\n<think>\n\n</think>\n\n"), false);
  assert.equal(opensReasoning("<|im_start|>assistant\n<think>\nplan"), false);
  assert.equal(opensReasoning(""), false);
});

Deno.test("opensReasoning() is false for the Qwen3 prompt whether thinking is on or off", async () => {
  const tok = await qwen3();
  const messages: ChatMessage[] = [{ role: "user", content: "hi" }];
  assert.equal(opensReasoning(tok.render({ messages, tools: [] }, true)), false);
  assert.equal(
    opensReasoning(tok.render({ messages, tools: [], enableThinking: false }, true)),
    false,
  );
});
