/**
 * The gateway's own APIs refuse a field they do not know with a 400 naming it, so a mistyped one
 * (`max_atempts`) is never silently dropped; the agent protocols still accept what real clients
 * send beyond what the gateway reads.
 */
import assert from "node:assert/strict";
import { listActiveRolloutJobs } from "../../lib/rollout/mod.ts";
import { ADMIN_HEADERS, kvSnapshot, startGateway } from "../_gateway.ts";

const TASK = { repo: "fixture:python_unittest", base_commit: "1bdf00de", eval_cmd: "true" };

Deno.test("the gateway's own bodies and queries refuse an unknown field with 400 naming it, writing nothing", async () => {
  const gw = await startGateway();
  try {
    const session = await gw.openSession();
    const before = await kvSnapshot(gw.kv);
    const cases: [string, string, unknown, string][] = [
      ["POST", "/rollout", { task: TASK, max_atempts: 3 }, "unknown field max_atempts"],
      ["POST", "/rollout", { task: { ...TASK, gold_patch: "" } }, "unknown field task.gold_patch"],
      [
        "POST",
        "/rollout",
        { task: TASK, budgets: { agent_ms: 1000, eval_msec: 1 } },
        "unknown field budgets.eval_msec",
      ],
      [
        "POST",
        "/evaluate",
        { task: { ...TASK, timeout: 5 }, patch: "", judge: "x" },
        "unknown field task.timeout; unknown field judge",
      ],
      ["POST", "/sessions", { metdata: { run: "a" } }, "unknown field metdata"],
      ["POST", "/engine/pause", { mod: "abort" }, "unknown field mod"],
      ["POST", "/engine/weight_version", { version: "7", abort: true }, "unknown field abort"],
      ["GET", `/sessions/${session.id}/samples?formt=verl`, undefined, "unknown field formt"],
      ["GET", "/sessions?staus=open", undefined, "unknown field staus"],
      [
        "POST",
        "/rollout",
        { task: TASK, ["x".repeat(500)]: 1, a: 1, b: 2, c: 3, d: 4, e: 5 },
        `unknown fields ${"x".repeat(64)}…, a, b, c, d (and 1 more)`,
      ],
    ];
    for (const [method, path, body, message] of cases) {
      const response = await gw.fetch(path, {
        method,
        headers: ADMIN_HEADERS,
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const json = await response.json();
      assert.equal(response.status, 400, `${method} ${path}: ${JSON.stringify(json)}`);
      assert.deepEqual(
        [json.error.type, json.error.message],
        ["invalid_request_error", message],
        `${method} ${path}`,
      );
    }
    assert.deepEqual(await kvSnapshot(gw.kv), before, "nothing was written");
    assert.deepEqual(await listActiveRolloutJobs(gw.kv), []);
  } finally {
    await gw.close();
  }
});

Deno.test("the session listing still takes any metadata.<key> filter", async () => {
  const gw = await startGateway();
  try {
    await gw.fetch("/sessions", {
      method: "POST",
      headers: ADMIN_HEADERS,
      body: JSON.stringify({ metadata: { suite: "a" } }),
    });
    const response = await gw.fetch("/sessions?metadata.suite=a&metadata.__proto__=x", {
      headers: ADMIN_HEADERS,
    });
    assert.equal(response.status, 200);
    assert.deepEqual((await response.json()).sessions, []);
  } finally {
    await gw.close();
  }
});

Deno.test("the agent protocols accept fields the gateway does not read, as real clients send them", async () => {
  const gw = await startGateway({ script: () => "Hi." });
  try {
    const { token } = await gw.openSession();
    const messages = await gw.fetch("/v1/messages", {
      method: "POST",
      headers: { "x-api-key": token },
      body: JSON.stringify({
        model: "qwen3",
        max_tokens: 16,
        messages: [{ role: "user", content: "Hello" }],
        context_management: { edits: [] },
        a_field_from_a_newer_sdk: true,
      }),
    });
    assert.equal(messages.status, 200, await messages.clone().text());
    const chat = await gw.fetch("/v1/chat/completions", {
      method: "POST",
      headers: { authorization: `Bearer ${token}` },
      body: JSON.stringify({
        model: "qwen3",
        max_tokens: 16,
        messages: [{ role: "user", content: "Hello again" }],
        store: false,
        a_field_from_a_newer_sdk: true,
      }),
    });
    assert.equal(chat.status, 200, await chat.clone().text());
  } finally {
    await gw.close();
  }
});
