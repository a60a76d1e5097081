/**
 * The output record the `<think>` families share, built for a family the gateway does not ship:
 * its answer read by its own parser under its own parser name, reasoning split off only when the
 * formats name a reasoning parser, and its stream adding up to its whole parse at every cut.
 */
import assert from "node:assert/strict";
import {
  type AnswerFormat,
  type OutputOptions,
  parseToolCalls,
  reasonedOutput,
  TAGGED_CALLS,
} from "../../lib/output/mod.ts";
import { fold, TOOLS } from "./_outputs.ts";

/** Hermes calls, as a new family might write them, with the parser names it was asked for. */
function acme() {
  const parsers: string[] = [];
  const answer: AnswerFormat = {
    parseAnswer: (text, tools, parser) => {
      parsers.push(parser);
      return parseToolCalls(text, new Set(tools.keys()));
    },
    regions: TAGGED_CALLS,
    callsStart: "<tool_call>",
  };
  return { output: reasonedOutput(answer), parsers };
}

const options = (reasoningParser: string | null, startsInReasoning = false): OutputOptions => ({
  startsInReasoning,
  tools: TOOLS,
  formats: { toolCallParser: "acme", reasoningParser },
});

const CALL = '<tool_call>\n{"name": "Bash", "arguments": {"command": "ls"}}\n</tool_call>';

Deno.test("reasonedOutput() reads a new family's answer by its own parser, after its reasoning", () => {
  const { output, parsers } = acme();
  assert.deepEqual(
    output.parse(`<think>\nplan\n</think>\n\nListing.\n${CALL}`, options("qwen3")),
    {
      blocks: [
        { type: "thinking", thinking: "plan" },
        { type: "text", text: "Listing." },
        { type: "tool_call", name: "Bash", input: { command: "ls" } },
      ],
      illFormed: [],
    },
  );
  // A call ends reasoning the prompt opened.
  assert.deepEqual(output.parse(`plan ${CALL} after`, options("qwen3", true)).blocks, [
    { type: "thinking", thinking: "plan " },
    { type: "tool_call", name: "Bash", input: { command: "ls" } },
    { type: "text", text: "after" },
  ]);
  assert.deepEqual(parsers, ["acme", "acme"]);
});

Deno.test("reasonedOutput() splits off no reasoning when the formats name no reasoning parser", () => {
  const { output } = acme();
  assert.deepEqual(output.parse("<think>plan</think> text", options(null)), {
    blocks: [{ type: "text", text: "<think>plan</think> text" }],
    illFormed: [],
  });
});

Deno.test("reasonedOutput()'s stream adds up to its whole parse, cut at every place", () => {
  const cases: [string, OutputOptions][] = [
    [`<think>\nplan\n</think>\n\nListing.\n${CALL}`, options("qwen3")],
    [`plan ${CALL} after`, options("qwen3", true)],
    ["<think>plan</think> text", options(null)],
    [`Text ${CALL.replace("Bash", "Unknown")} more ${CALL} tail`, options("qwen3")],
  ];
  for (const [text, opts] of cases) {
    const { output, parsers } = acme();
    const expected = output.parse(text, opts).blocks;
    for (let cut = 0; cut <= text.length; cut++) {
      const stream = output.stream(opts);
      const events = [
        ...stream.push(text.slice(0, cut)),
        ...stream.push(text.slice(cut)),
        ...stream.end(),
      ];
      assert.deepEqual(fold(events), expected, `cut at ${cut}: ${text}`);
    }
    assert.ok(parsers.every((parser) => parser === "acme"));
  }
});
