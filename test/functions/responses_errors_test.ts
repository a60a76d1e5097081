/**
 * The Responses API refuses what it cannot serve in OpenAI's error envelope, with the status the
 * OpenAI SDKs act on, and writes nothing to KV; a turn that fails after its stream started ends
 * with `response.failed`.
 */
import OpenAI from "openai";
import assert from "node:assert/strict";
import { startGateway, type TestGateway } from "../_gateway.ts";
import {
  bad,
  type ExpectedError,
  expectOpenAIError,
  expectSizeAndTokenRefusals,
} from "../_openai_errors.ts";
import { waitFor } from "../_host.ts";

const CALL = { type: "function_call", call_id: "c1", name: "f", arguments: "{}" };
const OUTPUT = { type: "function_call_output", call_id: "c1", output: "ok" };
const USER = { role: "user", content: "hi" };

const expectError = (
  gw: TestGateway,
  token: string | null,
  body: unknown,
  expected: ExpectedError,
) => expectOpenAIError(gw, "/v1/responses", token, body, expected);

Deno.test("/v1/responses refuses bad bodies with 400 in OpenAI's shape and leaves KV unchanged", async (t) => {
  const gw = await startGateway({ env: { MAX_BODY_BYTES: "8192", IMAGE_POLICY: "reject" } });
  const { token } = await gw.openSession();
  const cases: [string, unknown, ExpectedError][] = [
    ["invalid JSON", '{"model": "m",', bad(/not valid JSON/)],
    ["no input", { model: "m" }, bad(/input/, "input")],
    ["no model", { input: "hi" }, bad(/model/, "model")],
    ["empty input", { model: "m", input: [] }, bad(/input/, "input")],
    [
      "previous_response_id",
      { model: "m", input: "hi", previous_response_id: "resp_1" },
      bad(/keeps no responses by id/, "previous_response_id"),
    ],
    [
      "a conversation id",
      { model: "m", input: "hi", conversation: "conv_1" },
      bad(/keeps no conversations/, "conversation"),
    ],
    ["background", { model: "m", input: "hi", background: true }, bad(/background/, "background")],
    [
      "an item_reference",
      { model: "m", input: [USER, { type: "item_reference", id: "msg_1" }] },
      bad(/"item_reference" items are not supported/, "input.1.type"),
    ],
    [
      "tool_choice naming a missing tool",
      { model: "m", input: "hi", tool_choice: { type: "function", name: "nope" } },
      bad(/tool_choice: names "nope"/, "tool_choice"),
    ],
    [
      "tool_choice required without tools",
      { model: "m", input: "hi", tool_choice: "required" },
      bad(/required/, "tool_choice"),
    ],
    [
      "a function tool without a name",
      { model: "m", input: "hi", tools: [{ type: "function", parameters: {} }] },
      bad(/^tools\.0\.name/, "tools.0.name"),
    ],
    ["temperature over 2", { model: "m", input: "hi", temperature: 3 }, bad(/temperature/)],
    [
      "max_output_tokens of 0",
      { model: "m", input: "hi", max_output_tokens: 0 },
      bad(/max_output_tokens/),
    ],
    [
      "input ending with the assistant's call (prefill)",
      { model: "m", input: [USER, CALL] },
      bad(/prefill is not supported/, "input.1"),
    ],
    [
      "arguments that are not JSON",
      { model: "m", input: [USER, { ...CALL, arguments: "{bad" }, OUTPUT] },
      bad(/not valid JSON/, "input.1.arguments"),
    ],
    [
      "arguments that are a JSON array",
      { model: "m", input: [USER, { ...CALL, arguments: "[1]" }, OUTPUT] },
      bad(/must be a JSON object/, "input.1.arguments"),
    ],
    [
      "a __proto__ key in arguments",
      { model: "m", input: [USER, { ...CALL, arguments: '{"__proto__": {"x": 1}}' }, OUTPUT] },
      bad(/__proto__/),
    ],
    [
      "an image under the reject policy",
      {
        model: "m",
        input: [{ role: "user", content: [{ type: "input_image", image_url: "data:," }] }],
      },
      bad(/input_image parts are not supported/, "input.0.content.0"),
    ],
    [
      "audio",
      { model: "m", input: [{ role: "user", content: [{ type: "input_audio" }] }] },
      bad(/input_audio/),
    ],
    [
      "instructions only",
      { model: "m", instructions: "x", input: [{ role: "developer", content: "y" }] },
      bad(/at least one user message/, "input"),
    ],
    [
      "a message of an unknown role",
      { model: "m", input: [{ role: "robot", content: "x" }] },
      bad(/^input\.0\.role/, "input.0.role"),
    ],
  ];
  try {
    for (const [name, body, expected] of cases) {
      await t.step(name, () => expectError(gw, token, body, expected));
    }
    await expectSizeAndTokenRefusals(t, gw, "/v1/responses", token, {
      oversized: { model: "m", input: "x".repeat(9000) },
      body: { model: "m", input: "hi" },
    });
  } finally {
    await gw.close();
  }
});

Deno.test("a prompt over the context window is a 400 the SDK does not retry, worded as OpenAI words it", async () => {
  const gw = await startGateway({ env: { CONTEXT_LENGTH: "256" } });
  try {
    const { token } = await gw.openSession();
    const client = gw.openai(token, { maxRetries: 2 });
    const error = await client.responses.create({ model: "m", input: "word ".repeat(400) })
      .then(() => null, (error) => error);
    assert.ok(error instanceof OpenAI.BadRequestError, String(error));
    assert.equal(error.code, "context_length_exceeded");
    assert.match(error.message, /This model's maximum context length is 256 tokens/);
    assert.equal(gw.exchanges.length, 2, "the session's opening and one request: no retry");
    assert.equal(gw.engine.calls.length, 0);
  } finally {
    await gw.close();
  }
});

Deno.test("an overloaded engine is a 529 the SDK retries, and the retry is answered", async () => {
  const gw = await startGateway({ script: ["Fine."] });
  try {
    gw.engine.fault({ kind: "unavailable" });
    const { id, token } = await gw.openSession();
    const client = gw.openai(token, { maxRetries: 2 });
    const response = await client.responses.create({ model: "m", input: "hi" });
    assert.equal(response.output_text, "Fine.");
    const statuses = gw.exchanges.filter((e) => e.path === "/v1/responses").map((e) => e.status);
    assert.deepEqual(statuses, [529, 200]);
    assert.equal((await gw.samples(id)).length, 1);
  } finally {
    await gw.close();
  }
});

Deno.test("an engine lost after the stream started ends it with response.failed and records nothing", async () => {
  const gw = await startGateway({ script: ["word ".repeat(200)], latencyMs: 20 });
  try {
    const { id, token } = await gw.openSession();
    const response = await gw.fetch("/v1/responses", {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "m", input: "hi", stream: true }),
    });
    assert.equal(response.status, 200);
    const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
    let text = (await reader.read()).value ?? "";
    assert.match(text, /^event: response\.created\n/);
    await waitFor(() => Promise.resolve(gw.engine.calls.length === 1), "the engine call");
    await gw.engine.close(); // the engine goes away mid-generation and does not come back
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
      text += chunk.value;
    }
    const types = [...text.matchAll(/^event: (.+)$/gm)].map((m) => m[1]);
    // What was sampled before the engine went away was streamed; the response never completes.
    assert.deepEqual(types.slice(0, 2), ["response.created", "response.in_progress"]);
    assert.equal(types.at(-1), "response.failed");
    assert.ok(types.includes("response.output_text.delta"), "content arrived before the failure");
    assert.ok(!types.includes("response.completed"));
    const failed = JSON.parse(text.trim().split("\n").at(-1)!.slice("data: ".length));
    assert.equal(failed.sequence_number, types.length - 1);
    assert.equal(failed.response.status, "failed");
    assert.equal(failed.response.error.code, "engine_unavailable");
    assert.deepEqual(await gw.samples(id), []);
  } finally {
    await gw.close();
  }
});
