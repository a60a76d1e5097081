/**
 * Chat Completions refuses what it cannot serve in OpenAI's error envelope, with the status the
 * OpenAI SDKs act on, and writes nothing to KV; context overflow is worded as LiteLLM detects it.
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

const USER = [{ role: "user", content: "hi" }];

const expectError = (
  gw: TestGateway,
  token: string | null,
  body: unknown,
  expected: ExpectedError,
) => expectOpenAIError(gw, "/v1/chat/completions", token, body, expected);

Deno.test("/v1/chat/completions refuses bad bodies with 400 in OpenAI's shape and leaves KV unchanged", async (t) => {
  const gw = await startGateway({ env: { MAX_BODY_BYTES: "8192", IMAGE_POLICY: "reject" } });
  const { token } = await gw.openSession();
  const cases: [string, unknown, ExpectedError][] = [
    ["invalid JSON", '{"model": "m",', bad(/not valid JSON/)],
    ["no messages", { model: "m" }, bad(/messages: field required/, "messages")],
    ["empty messages", { model: "m", messages: [] }, bad(/messages/, "messages")],
    ["unknown role", { model: "m", messages: [{ role: "robot", content: "x" }] }, bad(/role/)],
    ["n > 1", { model: "m", messages: USER, n: 2 }, bad(/only n = 1/, "n")],
    [
      "top_logprobs without logprobs",
      { model: "m", messages: USER, top_logprobs: 3 },
      bad(/requires logprobs/, "top_logprobs"),
    ],
    [
      "top_logprobs over 20",
      { model: "m", messages: USER, logprobs: true, top_logprobs: 21 },
      bad(/top_logprobs/),
    ],
    ["temperature over 2", { model: "m", messages: USER, temperature: 3 }, bad(/temperature/)],
    [
      "tool_choice naming a missing tool",
      {
        model: "m",
        messages: USER,
        tool_choice: { type: "function", function: { name: "nope" } },
      },
      bad(/tool_choice: names "nope"/, "tool_choice"),
    ],
    [
      "tool_choice required without tools",
      { model: "m", messages: USER, tool_choice: "required" },
      bad(/required/),
    ],
    [
      "response_format of an unknown type",
      { model: "m", messages: USER, response_format: { type: "xml" } },
      bad(/response_format/),
    ],
    [
      "a last assistant message (prefill)",
      { model: "m", messages: [...USER, { role: "assistant", content: "Sure" }] },
      bad(/prefill is not supported/, "messages.1"),
    ],
    [
      "tool arguments that are not JSON",
      {
        model: "m",
        messages: [
          ...USER,
          {
            role: "assistant",
            content: null,
            tool_calls: [{
              id: "c1",
              type: "function",
              function: { name: "f", arguments: "{bad" },
            }],
          },
          { role: "tool", tool_call_id: "c1", content: "ok" },
        ],
      },
      bad(/not valid JSON/, "messages.1.tool_calls.0.function.arguments"),
    ],
    [
      "tool arguments that are a JSON array",
      {
        model: "m",
        messages: [
          ...USER,
          {
            role: "assistant",
            tool_calls: [{ id: "c1", type: "function", function: { name: "f", arguments: "[1]" } }],
          },
          { role: "tool", tool_call_id: "c1", content: "ok" },
        ],
      },
      bad(/must be a JSON object/),
    ],
    [
      "a __proto__ key in tool arguments",
      {
        model: "m",
        messages: [
          ...USER,
          {
            role: "assistant",
            tool_calls: [{
              id: "c1",
              type: "function",
              function: { name: "f", arguments: '{"__proto__": {"x": 1}}' },
            }],
          },
          { role: "tool", tool_call_id: "c1", content: "ok" },
        ],
      },
      bad(/__proto__/),
    ],
    [
      "an image under the reject policy",
      {
        model: "m",
        messages: [{
          role: "user",
          content: [{ type: "image_url", image_url: { url: "data:," } }],
        }],
      },
      bad(/image_url parts are not supported/, "messages.0.content.0"),
    ],
    [
      "audio",
      {
        model: "m",
        messages: [{ role: "user", content: [{ type: "input_audio", input_audio: {} }] }],
      },
      bad(/input_audio/),
    ],
    [
      "the legacy function role",
      { model: "m", messages: [...USER, { role: "function", name: "f", content: "x" }] },
      bad(/legacy "function" role/),
    ],
    [
      "only system messages",
      { model: "m", messages: [{ role: "system", content: "x" }] },
      bad(/at least one user message/),
    ],
    [
      "a stop list too long",
      { model: "m", messages: USER, stop: Array(65).fill("x") },
      bad(/stop/),
    ],
  ];
  try {
    for (const [name, body, expected] of cases) {
      await t.step(name, () => expectError(gw, token, body, expected));
    }
    await expectSizeAndTokenRefusals(t, gw, "/v1/chat/completions", token, {
      oversized: { model: "m", messages: [{ role: "user", content: "x".repeat(9000) }] },
      body: { model: "m", messages: USER },
    });
  } finally {
    await gw.close();
  }
});

Deno.test("a prompt over the context window is worded as OpenAI words it, and the SDK does not retry it", async () => {
  const gw = await startGateway({ env: { CONTEXT_LENGTH: "256" } });
  try {
    const { token } = await gw.openSession();
    const client = gw.openai(token, { maxRetries: 2 });
    const error = await client.chat.completions.create({
      model: "m",
      messages: [{ role: "user", content: "word ".repeat(400) }],
    }).then(() => null, (error) => error);
    assert.ok(error instanceof OpenAI.BadRequestError, String(error));
    assert.equal(error.code, "context_length_exceeded");
    assert.match(error.message, /This model's maximum context length is 256 tokens/);
    assert.equal(gw.exchanges.length, 2, "the session's opening and one request: no retry");
    assert.equal(gw.engine.calls.length, 0);
  } finally {
    await gw.close();
  }
});

Deno.test("GET /v1/models answers both SDKs", async () => {
  const gw = await startGateway({ env: { MODEL_ID: "qwen3-test" } });
  try {
    const { token } = await gw.openSession();
    const openai = gw.openai(token);
    const models = [];
    for await (const model of openai.models.list()) models.push(model);
    assert.deepEqual(models.map((model) => [model.id, model.object]), [["qwen3-test", "model"]]);
    assert.equal((await openai.models.retrieve("any/model")).id, "any/model");
    // The per-session base URL serves the list too, to the token in the path.
    const listed = await gw.fetch(`/sessions/${token}/v1/models`);
    assert.equal(listed.status, 200);
    assert.equal((await listed.json()).data[0].id, "qwen3-test");
    // A path token no header could carry (control or non-ASCII characters) is refused as one.
    for (const segment of ["not-a-token", "%0Abad", "%EF%BF%BD", "a%00b"]) {
      const refused = await gw.fetch(`/sessions/${segment}/v1/models`);
      assert.equal(refused.status, 401, segment);
      assert.equal((await refused.json()).error.type, "authentication_error");
    }
  } finally {
    await gw.close();
  }
});
