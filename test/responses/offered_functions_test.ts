import assert from "node:assert/strict";
import { LimitError, MAX_TOOLS } from "../../lib/limits/mod.ts";
import {
  buildResponse,
  EventSequence,
  offeredFunctions,
  ResponseCreateParams,
  ResponseStreamWriter,
  toMessagesRequest,
} from "../../lib/responses/mod.ts";

const parse = (body: Record<string, unknown>) =>
  ResponseCreateParams.parse({ model: "m", input: "hi", ...body });
const fn = (name: string, description = name) => ({
  type: "function",
  name,
  description,
  parameters: { type: "object", properties: {} },
});
/** Codex's tools with `[agents]` on: functions, then its sub-agent tools in a namespace. */
const CODEX_TOOLS = [
  fn("exec_command"),
  fn("view_image"),
  { type: "web_search" },
  {
    type: "namespace",
    name: "multi_agent_v1",
    description: "Tools for spawning and managing sub-agents.",
    tools: [fn("spawn_agent"), fn("wait_agent"), fn("exec_command", "a namespaced copy")],
  },
];

Deno.test("offeredFunctions() shows namespaced functions by their plain names after the top-level ones, each name once", () => {
  const request = parse({ tools: CODEX_TOOLS });
  const offered = offeredFunctions(request.tools);
  assert.deepEqual(offered.functions.map((tool) => [tool.name, tool.description]), [
    ["exec_command", "exec_command"],
    ["view_image", "view_image"],
    ["spawn_agent", "spawn_agent"],
    ["wait_agent", "wait_agent"],
  ]);
  assert.equal(offered.namespaceOf("spawn_agent"), "multi_agent_v1");
  assert.equal(offered.namespaceOf("exec_command"), null, "the top-level copy is the one shown");
  assert.equal(offered.namespaceOf("web_search"), null);
  assert.equal(offered.namespaceOf("__proto__"), null);
  // What the model is shown: the same functions, with their schemas.
  assert.deepEqual(toMessagesRequest(request).tools?.map((tool) => tool.name), [
    "exec_command",
    "view_image",
    "spawn_agent",
    "wait_agent",
  ]);
});

Deno.test("offeredFunctions() refuses more functions in all than a request may offer, naming tools", () => {
  const many = Array.from({ length: MAX_TOOLS }, (_, i) => fn(`f${i}`));
  const request = parse({
    tools: [fn("top"), { type: "namespace", name: "ns", tools: many }],
  });
  assert.throws(
    () => offeredFunctions(request.tools),
    (error: unknown) => error instanceof LimitError && error.field === "tools",
  );
});

Deno.test("a call of a namespaced function is answered with its namespace, in JSON and in the stream", () => {
  const request = parse({ tools: CODEX_TOOLS });
  const output = {
    rid: "0123456789abcdef",
    blocks: [
      { type: "tool_call" as const, name: "spawn_agent", input: { message: "Go." } },
      { type: "tool_call" as const, name: "exec_command", input: { cmd: "ls" } },
    ],
    end: { reason: "end_of_turn" as const, stopSequence: null },
    inputTokens: 5,
    outputTokens: 3,
    outputIds: [1, 2, 3],
    logprobs: [0, 0, 0],
  };
  const items = buildResponse(output, request, 0).output;
  assert.deepEqual(
    items.map((item) =>
      item.type === "function_call" ? [item.name, item.namespace ?? null] : item.type
    ),
    [["spawn_agent", "multi_agent_v1"], ["exec_command", null]],
  );
  const writer = new ResponseStreamWriter(
    new EventSequence(),
    output.rid,
    false,
    offeredFunctions(request.tools).namespaceOf,
  );
  const streamed = writer.content([
    { type: "tool_call", index: 0, name: "spawn_agent", input: { message: "Go." } },
  ]).filter((event) => event.type === "response.output_item.done");
  assert.deepEqual(streamed.map((event) => event.item), [items[0]]);
});
