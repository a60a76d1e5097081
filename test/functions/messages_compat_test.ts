/**
 * The rest of the surface Claude Code touches: the connection probe, the model list,
 * count_tokens, images under the placeholder policy, and the attribution line.
 */
import assert from "node:assert/strict";
import { ADMIN_TOKEN, kvSnapshot, startGateway } from "../_gateway.ts";

Deno.test("HEAD /api/hello answers 200 with no body", async () => {
  const gw = await startGateway();
  try {
    const response = await gw.fetch("/api/hello", { method: "HEAD" });
    assert.equal(response.status, 200);
    assert.equal(await response.text(), "");
  } finally {
    await gw.close();
  }
});

Deno.test("GET /v1/models lists the served model to a session or admin token, not to strangers", async () => {
  const gw = await startGateway({ env: { MODEL_ID: "qwen3-8b", CONTEXT_LENGTH: "40960" } });
  try {
    const { token } = await gw.openSession();
    for (const key of [token, ADMIN_TOKEN]) {
      const response = await gw.fetch("/v1/models?limit=1000", {
        headers: { "x-api-key": key },
      });
      assert.equal(response.status, 200);
      assert.deepEqual(await response.json(), {
        object: "list",
        data: [{
          id: "qwen3-8b",
          object: "model",
          created: 0,
          owned_by: "rollout-gateway",
          type: "model",
          display_name: "qwen3-8b",
          created_at: "1970-01-01T00:00:00.000Z",
          max_input_tokens: 40_960,
          max_tokens: 40_960,
        }],
        has_more: false,
        first_id: "qwen3-8b",
        last_id: "qwen3-8b",
      });
    }
    const stranger = await gw.fetch("/v1/models", { headers: { "x-api-key": "nobody" } });
    assert.equal(stranger.status, 401);
    assert.equal((await stranger.json()).error.type, "authentication_error");
  } finally {
    await gw.close();
  }
});

Deno.test("count_tokens counts with the chat template, writes nothing and checks its input", async () => {
  const gw = await startGateway({ env: { DEV_OPEN_SESSIONS: "true" } });
  try {
    const body = {
      model: "m",
      system: "Be brief.",
      tools: [{
        name: "Bash",
        input_schema: { type: "object", properties: { command: { type: "string" } } },
      }],
      messages: [{ role: "user", content: "hi" }],
    };
    const expected = gw.tokenizer.encode(gw.tokenizer.render({
      messages: [{ role: "system", content: "Be brief." }, { role: "user", content: "hi" }],
      tools: [{
        type: "function",
        function: { name: "Bash", parameters: body.tools[0].input_schema },
      }],
    }, true)).length;
    const before = await kvSnapshot(gw.kv);
    const post = (payload: unknown, key: string) =>
      gw.fetch("/v1/messages/count_tokens", {
        method: "POST",
        headers: { "x-api-key": key, "content-type": "application/json" },
        body: JSON.stringify(payload),
      });
    const counted = await post(body, "fresh-dev-token");
    assert.equal(counted.status, 200);
    assert.deepEqual(await counted.json(), { input_tokens: expected });
    assert.deepEqual(await kvSnapshot(gw.kv), before, "a first count opens no session");
    const bad = await post(
      { ...body, messages: [{ role: "user", content: [{ type: "nope" }] }] },
      "fresh-dev-token",
    );
    assert.equal(bad.status, 400);
    assert.equal((await bad.json()).error.type, "invalid_request_error");
    const none = await gw.fetch("/v1/messages/count_tokens", {
      method: "POST",
      body: JSON.stringify(body),
    });
    assert.equal(none.status, 401);
    assert.equal(gw.engine.calls.length, 0);
  } finally {
    await gw.close();
  }
});

Deno.test("IMAGE_POLICY=placeholder (the default) lets the model read a placeholder where an image was", async () => {
  const gw = await startGateway({ script: ["I cannot see it."] });
  try {
    const { token } = await gw.openSession();
    const image = {
      type: "image",
      source: { type: "base64", media_type: "image/png", data: "AA==" },
    };
    const response = await gw.fetch("/v1/messages", {
      method: "POST",
      headers: { "x-api-key": token },
      body: JSON.stringify({
        model: "m",
        max_tokens: 32,
        messages: [{ role: "user", content: [{ type: "text", text: "What is this?" }, image] }],
      }),
    });
    assert.equal(response.status, 200);
    await response.body?.cancel();
    assert.match(
      gw.tokenizer.decode(gw.engine.calls[0].inputIds),
      /What is this\?\n\[image omitted \(image\/png, 1 byte\): the served model reads text only\]<\|im_end\|>/,
    );
  } finally {
    await gw.close();
  }
});

Deno.test("Claude Code's attribution line stays out of the prompt unless KEEP_ATTRIBUTION is set", async () => {
  const system = [
    {
      type: "text",
      text: "x-anthropic-billing-header: cc_version=2.1.329.0a8; cc_entrypoint=sdk-cli;",
    },
    { type: "text", text: "You are an agent.", cache_control: { type: "ephemeral" } },
  ];
  for (const keep of [false, true]) {
    const gw = await startGateway({ env: { KEEP_ATTRIBUTION: String(keep) }, script: ["ok"] });
    try {
      const { token } = await gw.openSession();
      const response = await gw.fetch("/v1/messages", {
        method: "POST",
        headers: { "x-api-key": token },
        body: JSON.stringify({
          model: "m",
          max_tokens: 8,
          system,
          messages: [{ role: "user", content: "hi" }],
        }),
      });
      assert.equal(response.status, 200);
      await response.body?.cancel();
      const prompt = gw.tokenizer.decode(gw.engine.calls[0].inputIds);
      assert.equal(prompt.includes("x-anthropic-billing-header"), keep);
      assert.match(
        prompt,
        /^<\|im_start\|>system\n(x-anthropic-billing-header: [^\n]*\n)?You are an agent\.<\|im_end\|>/,
      );
    } finally {
      await gw.close();
    }
  }
});
