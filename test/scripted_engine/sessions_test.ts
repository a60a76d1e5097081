/**
 * The scripted engine's SGLang sessions, prefix cache and death, over HTTP as SGLang serves them:
 * a session request is built from the request it names; unknown sessions and requests abort; a
 * killed engine refuses connections and comes back with nothing cached.
 */
import assert from "node:assert/strict";
import { type ScriptedEngine, startScriptedEngine } from "../../lib/scripted_engine/mod.ts";
import { PrefixCache } from "../../lib/scripted_engine/_prefix_cache.ts";
import { qwen3 } from "../_gateway.ts";

async function post(engine: ScriptedEngine, path: string, body: unknown) {
  const response = await fetch(`${engine.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, body: text === "" ? null : JSON.parse(text) };
}

const generate = (engine: ScriptedEngine, rid: string, ids: number[], session?: unknown) =>
  post(engine, "/generate", {
    rid,
    input_ids: ids,
    sampling_params: { max_new_tokens: 16 },
    ...(session ? { session_params: session } : {}),
  });

Deno.test("a session request is built from the one it names; unknown sessions and requests abort", async () => {
  const tokenizer = await qwen3();
  const engine = await startScriptedEngine({ tokenizer, script: () => "ok" });
  try {
    assert.deepEqual(
      await post(engine, "/open_session", { capacity_of_str_len: 100, session_id: "s1" }),
      {
        status: 200,
        body: "s1",
      },
    );
    const taken = await post(engine, "/open_session", {
      capacity_of_str_len: 100,
      session_id: "s1",
    });
    assert.equal(taken.status, 400);
    const first = await generate(engine, "r1", [1, 2, 3], { id: "s1", rid: null });
    assert.equal(first.body.meta_info.prompt_tokens, 3);
    const output = first.body.output_ids as number[];
    const second = await generate(engine, "r2", [7, 8], { id: "s1", rid: "r1" });
    assert.equal(second.body.meta_info.prompt_tokens, 3 + output.length + 2);
    assert.deepEqual(engine.calls[1].inputIds, [1, 2, 3, ...output, 7, 8]);
    assert.deepEqual(engine.calls[1].sentIds, [7, 8]);
    // What it found cached: everything of the first request.
    assert.equal(second.body.meta_info.cached_tokens, 3 + output.length);
    const unknownRid = await generate(engine, "r3", [9], { id: "s1", rid: "nope" });
    assert.deepEqual(unknownRid.body.meta_info.finish_reason.type, "abort");
    assert.equal(unknownRid.body.meta_info.finish_reason.message, "Invalid request session id");
    assert.deepEqual(unknownRid.body.output_ids, []);
    const unknownSession = await generate(engine, "r4", [9], { id: "s2", rid: "r1" });
    assert.match(
      unknownSession.body.meta_info.finish_reason.message,
      /session id s2 does not exist/,
    );
    await post(engine, "/close_session", { session_id: "s1" });
    assert.deepEqual(engine.sessions.closed, ["s1"]);
    const closed = await generate(engine, "r5", [9], { id: "s1", rid: "r2" });
    assert.equal(closed.body.meta_info.finish_reason.type, "abort");
  } finally {
    await engine.close();
  }
});

Deno.test("a killed engine refuses connections, then comes back on its port with nothing cached", async () => {
  const tokenizer = await qwen3();
  const engine = await startScriptedEngine({ tokenizer, script: () => "ok" });
  try {
    await post(engine, "/open_session", { capacity_of_str_len: 100, session_id: "s1" });
    await generate(engine, "r1", [1, 2, 3, 4]);
    await engine.kill();
    assert.equal(engine.alive(), false);
    await assert.rejects(fetch(`${engine.url}/health`));
    engine.revive();
    assert.equal((await fetch(`${engine.url}/health`)).status, 200);
    const again = await generate(engine, "r2", [1, 2, 3, 4]);
    assert.equal(again.body.meta_info.cached_tokens, 0);
    assert.equal(engine.sessions.size, 0);
    engine.setHealth(503);
    const draining = await fetch(`${engine.url}/health`);
    assert.equal(draining.status, 503);
  } finally {
    await engine.close();
  }
});

Deno.test("the prefix cache holds a chain's turns as one path and drops the least recently used past its tokens", () => {
  const cache = new PrefixCache(32, 100);
  const a1 = Array.from({ length: 30 }, (_, i) => i);
  cache.match(a1);
  cache.add(a1, [90, 91]);
  const a2 = [...a1, 90, 91, 5, 6];
  assert.equal(cache.match(a2), 32);
  cache.add(a2, [92]);
  // The second turn's sequence extends the first's: one entry of 35 tokens, not 32 + 35.
  assert.equal(cache.tokens, 35);
  const b = Array.from({ length: 70 }, (_, i) => 1000 + i);
  assert.equal(cache.match(b), 0);
  cache.add(b, [7]);
  // 35 + 71 > 100: the least recently used (the first chain) goes.
  assert.equal(cache.tokens, 71);
  assert.equal(cache.match([...a2, 92, 1]), 0);
  assert.equal(cache.match([...b, 7, 1]), 71);
});
