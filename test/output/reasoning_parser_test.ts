import assert from "node:assert/strict";
import { splitReasoning } from "../../lib/output/mod.ts";

Deno.test("splitReasoning() separates reasoning from the answer and trims their newlines", () => {
  assert.deepEqual(splitReasoning("<think>\nplan the work\n</think>\n\nThe answer.", false), {
    reasoning: "plan the work",
    rest: "The answer.",
  });
});

Deno.test("splitReasoning() keeps inner newlines of reasoning and trailing text of the answer", () => {
  assert.deepEqual(splitReasoning("<think>\nline 1\n\nline 2\n</think>\n\nA\n\nB\n", false), {
    reasoning: "line 1\n\nline 2",
    rest: "A\n\nB\n",
  });
});

Deno.test("splitReasoning() returns no reasoning when the output does not open <think>", () => {
  assert.deepEqual(splitReasoning("Just an answer.", false), {
    reasoning: null,
    rest: "Just an answer.",
  });
  assert.deepEqual(splitReasoning("I think </think> not", false), {
    reasoning: null,
    rest: "I think </think> not",
  });
});

Deno.test("splitReasoning() accepts whitespace before the opening <think>", () => {
  assert.deepEqual(splitReasoning("\n  <think>\nplan\n</think>\n\nanswer", false), {
    reasoning: "plan",
    rest: "answer",
  });
});

Deno.test("splitReasoning() reads output as reasoning when the prompt opened <think>", () => {
  assert.deepEqual(splitReasoning("plan\n</think>\n\nanswer", true), {
    reasoning: "plan",
    rest: "answer",
  });
});

Deno.test("splitReasoning() treats output without </think> as truncated reasoning", () => {
  assert.deepEqual(splitReasoning("<think>\nI was cut sho", false), {
    reasoning: "I was cut sho",
    rest: "",
  });
  assert.deepEqual(splitReasoning("still thinking\n", true), {
    reasoning: "still thinking",
    rest: "",
  });
});

Deno.test("splitReasoning() ends reasoning at a <tool_call> without </think>", () => {
  const call = '<tool_call>\n{"name": "Bash", "arguments": {"command": "ls"}}\n</tool_call>';
  assert.deepEqual(splitReasoning(`<think>\nlist files\n${call}`, false), {
    reasoning: "list files",
    rest: call,
  });
  assert.deepEqual(splitReasoning(`list files\n\n${call}`, true), {
    reasoning: "list files",
    rest: call,
  });
});

Deno.test("splitReasoning() keeps a tool call after </think> in the answer", () => {
  const call = '<tool_call>\n{"name": "Bash", "arguments": {}}\n</tool_call>';
  assert.deepEqual(splitReasoning(`<think>\nplan\n</think>\n\nText.\n${call}`, false), {
    reasoning: "plan",
    rest: `Text.\n${call}`,
  });
});

Deno.test("splitReasoning() gives empty reasoning for an empty think block", () => {
  assert.deepEqual(splitReasoning("<think>\n\n</think>\n\nHello", false), {
    reasoning: "",
    rest: "Hello",
  });
});
