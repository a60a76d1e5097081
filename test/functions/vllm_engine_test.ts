/**
 * The gateway on vLLM through HTTP, beyond what the engine-path tests run on both dialects:
 * `ENGINE_API=vllm` alone serves on the scripted engine speaking vLLM, `/engine/pause` takes
 * vLLM's modes (and refuses SGLang's others, naming vLLM's), a `wait` pause lets the running turn
 * finish under the version it started with, and `ENGINE_URL` is the engine's URL beside its old
 * name.
 */
import assert from "node:assert/strict";
import { buildDeps } from "../../functions/_deps.ts";
import { createGatewayApp } from "../../functions/serve.ts";
import { resolveConfig } from "../../lib/config/mod.ts";
import { ConfigError } from "../../lib/errors/mod.ts";
import { startScriptedEngine } from "../../lib/scripted_engine/mod.ts";
import { openSession } from "../../lib/session/mod.ts";
import { ADMIN_HEADERS, qwen3, type SampleJson, startGateway } from "../_gateway.ts";
import { until } from "../engine/_client.ts";

Deno.test("ENGINE_API=vllm with no engine URL serves a turn on the scripted engine speaking vLLM", async () => {
  const config = resolveConfig({ KV_PATH: ":memory:", ENGINE_API: "vllm" });
  assert.equal(config.engineUrl, null);
  const deps = await buildDeps(config, { tokenizer: await qwen3() });
  try {
    const app = createGatewayApp(deps);
    const { token } = await openSession(deps.kv);
    const response = await app.request("/v1/chat/completions", {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({
        model: "m",
        max_tokens: 32,
        messages: [{ role: "user", content: "hi" }],
      }),
    });
    assert.equal(response.status, 200, await response.clone().text());
    assert.equal((await response.json()).object, "chat.completion");
    const calls = deps.scripted!.calls;
    assert.equal(calls.length, 1);
    // vLLM's request: its sampling parameters, not SGLang's.
    assert.deepEqual(Object.keys(calls[0].sampling).sort(), [
      "detokenize",
      "include_stop_str_in_output",
      "logprobs",
      "max_tokens",
      "skip_special_tokens",
      "spaces_between_special_tokens",
      "stop_token_ids",
    ]);
  } finally {
    await deps.close();
  }
});

Deno.test("on vLLM, /engine/pause takes vLLM's modes and refuses the others, naming them", async () => {
  const gw = await startGateway({ env: { ENGINE_API: "vllm" } });
  try {
    const refused = await gw.fetch("/engine/pause", {
      method: "POST",
      headers: ADMIN_HEADERS,
      body: JSON.stringify({ mode: "retract" }),
    });
    assert.equal(refused.status, 400);
    assert.match((await refused.json()).error.message, /^mode: .*abort.*wait.*keep/);
    const paused = await gw.fetch("/engine/pause", { method: "POST", headers: ADMIN_HEADERS });
    assert.equal(paused.status, 200);
    assert.deepEqual(await paused.json(), {
      mode: "abort",
      workers: [{ url: gw.engine.url, body: { status: "paused" } }],
    });
    const resumed = await gw.fetch("/engine/continue", { method: "POST", headers: ADMIN_HEADERS });
    assert.deepEqual(await resumed.json(), {
      workers: [{ url: gw.engine.url, body: { status: "resumed" } }],
    });
    assert.deepEqual(gw.engine.pauses, ["abort"]);
  } finally {
    await gw.close();
  }
});

Deno.test("a wait pause on vLLM lets the running turn finish, under the version it started with", async () => {
  const text = "Every token of this reply is sampled before the pause takes hold.";
  const gw = await startGateway({ env: { ENGINE_API: "vllm" }, script: () => text, latencyMs: 5 });
  try {
    const { id, token } = await gw.openSession();
    const stream = gw.anthropic(token).messages.stream({
      model: "m",
      max_tokens: 200,
      messages: [{ role: "user", content: "Go on." }],
    });
    await until(() => (gw.engine.calls[0]?.produced ?? 0) > 2);
    const paused = await gw.fetch("/engine/pause", {
      method: "POST",
      headers: ADMIN_HEADERS,
      body: JSON.stringify({ mode: "wait" }),
    });
    assert.equal(paused.status, 200);
    // The pause returned once nothing ran: the turn's one call had finished.
    assert.equal(gw.engine.inFlight(), 0);
    assert.ok(gw.engine.calls[0].output !== undefined);
    await gw.fetch("/engine/weight_version", {
      method: "POST",
      headers: ADMIN_HEADERS,
      body: JSON.stringify({ version: "3" }),
    });
    await gw.fetch("/engine/continue", { method: "POST", headers: ADMIN_HEADERS });
    const message = await stream.finalMessage();
    assert.deepEqual(message.content, [{ type: "text", text }]);
    assert.equal(gw.engine.calls.length, 1);
    const [sample] = await gw.samples(id) as SampleJson[];
    assert.deepEqual(sample.turns[0].weight_versions, ["default"]);
  } finally {
    await gw.close();
  }
});

Deno.test("ENGINE_URL is the engine's URL; SGLANG_URL, its old name, is read, and may not say otherwise", () => {
  const url = "http://10.0.0.5:8000";
  assert.equal(resolveConfig({ ENGINE_URL: url }).engineUrl, url);
  assert.equal(resolveConfig({ SGLANG_URL: url }).engineUrl, url);
  assert.equal(resolveConfig({ ENGINE_URL: url, SGLANG_URL: url }).engineUrl, url);
  assert.throws(
    () => resolveConfig({ ENGINE_URL: url, SGLANG_URL: "http://10.0.0.6:30000" }),
    (error) =>
      error instanceof ConfigError && error.variable === "ENGINE_URL" &&
      error.message ===
        'Invalid ENGINE_URL: its old name SGLANG_URL says otherwise ("http://10.0.0.6:30000")',
  );
});

Deno.test("on vLLM, pause, version and continue reach every worker ENGINE_WORKERS lists", async () => {
  const tokenizer = await qwen3();
  const other = await startScriptedEngine({ tokenizer, dialect: "vllm" });
  const gw = await startGateway({ env: { ENGINE_API: "vllm" } });
  // The configured list: the gateway's own engine and another worker.
  const workers = [gw.engine.url, other.url];
  const deps = await buildDeps(
    resolveConfig({
      KV_PATH: ":memory:",
      ENGINE_API: "vllm",
      ENGINE_URL: gw.engine.url,
      ENGINE_WORKERS: workers.join(","),
      ADMIN_TOKEN: "admin-token-0123456789",
    }),
    { tokenizer },
  );
  try {
    const app = createGatewayApp(deps);
    const call = (path: string, body?: unknown) =>
      app.request(path, {
        method: "POST",
        headers: { authorization: "Bearer admin-token-0123456789" },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
    assert.equal((await call("/engine/pause", { mode: "keep" })).status, 200);
    assert.equal((await call("/engine/weight_version", { version: "4" })).status, 200);
    assert.equal((await call("/engine/continue")).status, 200);
    for (const engine of [gw.engine, other]) {
      assert.deepEqual(engine.pauses, ["keep"]);
      assert.deepEqual(engine.weightUpdates, ["4"]);
      assert.equal(engine.paused(), null);
    }
    const versions = await app.request("/engine/weight_version", {
      headers: { authorization: "Bearer admin-token-0123456789" },
    });
    assert.deepEqual(
      (await versions.json()).workers,
      workers.map((url) => ({ url, version: "4" })),
    );
  } finally {
    await deps.close();
    await gw.close();
    await other.close();
  }
});
