/**
 * Two gateway processes (separate PIDs) sharing one KV file: a session's requests alternating
 * between them, and many sessions driven through both at once (which makes their commits meet
 * sqlite's `database is locked`). Every chain is token-exact.
 */
import assert from "node:assert/strict";
import {
  type Reply,
  type Script,
  type ScriptedEngine,
  startScriptedEngine,
} from "../../lib/scripted_engine/mod.ts";
import { assertChainExact, callsOfSample } from "../_chain_exact.ts";
import { qwen3 } from "../_gateway.ts";
import {
  bashCall,
  followUp,
  type GatewayProcess,
  openSession,
  postMessages,
  type ReplyJson,
  samples,
  spawnGateway,
} from "./_gateway_process.ts";

/** Runs `body` against two gateway processes started at once on a fresh KV file. */
async function withTwoGateways(
  script: Script | Reply[],
  body: (a: GatewayProcess, b: GatewayProcess, engine: ScriptedEngine) => Promise<void>,
) {
  const engine = await startScriptedEngine({ tokenizer: await qwen3(), script });
  const dir = await Deno.makeTempDir({ prefix: "two_gateways_" });
  const env = { KV_PATH: `${dir}/gateway.kv`, SGLANG_URL: engine.url };
  const started = await Promise.allSettled([spawnGateway(env), spawnGateway(env)]);
  try {
    const [a, b] = started.map((result) => {
      if (result.status === "rejected") throw result.reason;
      return result.value;
    });
    assert.notEqual(a.pid, b.pid);
    await body(a, b, engine);
  } finally {
    for (const result of started) if (result.status === "fulfilled") await result.value.close();
    await engine.close();
    await Deno.remove(dir, { recursive: true });
  }
}

/** Posts one turn and returns the reply, asserting a 200. */
async function turn(gateway: GatewayProcess, token: string, messages: unknown[], label: string) {
  const response = await postMessages(gateway.url, token, messages);
  assert.equal(response.status, 200, `${label}: ${await response.clone().text()}`);
  return await response.json() as ReplyJson;
}

Deno.test("a session's turns alternating between two gateway processes form one exact chain", async () => {
  const replies = [...Array(7)].map((_, i) => bashCall(`step ${i}`));
  await withTwoGateways([...replies, "All steps ran."], async (a, b, engine) => {
    const { id, token } = await openSession(a.url);
    let messages: unknown[] = [{ role: "user", content: "Run the steps." }];
    for (let k = 0; k < 8; k++) {
      // A, B, A, B, ...: every turn is served by the process that did not record the last one.
      const reply = await turn(k % 2 === 0 ? a : b, token, messages, `turn ${k}`);
      assert.equal(reply.stop_reason, k < 7 ? "tool_use" : "end_turn", `turn ${k}`);
      messages = followUp(messages, reply, k);
    }
    assert.equal(engine.calls.length, 8);
    const recorded = await samples(b.url, id);
    assert.deepEqual(await samples(a.url, id), recorded, "both processes read the same chain");
    assertChainExact(engine.calls, recorded);
    assert.ok(recorded[0].turns.every((t) => t.flags.length === 0), "no turn was flagged");
  });
});

Deno.test("sessions driven concurrently through both processes all record exact chains", async () => {
  const script: Script = (call) => bashCall(`echo ${call.inputIds.length}`);
  await withTwoGateways(script, async (a, b, engine) => {
    const gateways = [a, b];
    const sessions = await Promise.all(
      [...Array(8)].map((_, i) => openSession(gateways[i % 2].url)),
    );
    await Promise.all(sessions.map(async ({ id, token }, i) => {
      let messages: unknown[] = [{ role: "user", content: `Task of ${id}.` }];
      for (let k = 0; k < 5; k++) {
        // Half the sessions start on A, half on B, and each then alternates.
        const reply = await turn(gateways[(i + k) % 2], token, messages, `${id} turn ${k}`);
        assert.equal(reply.stop_reason, "tool_use", `${id} turn ${k}`);
        messages = followUp(messages, reply, k);
      }
    }));
    assert.equal(engine.calls.length, 8 * 5);
    for (const [i, { id }] of sessions.entries()) {
      const recorded = await samples(gateways[i % 2].url, id);
      assert.equal(recorded.length, 1, `${id}: one chain`);
      const calls = callsOfSample(engine.calls, recorded[0]);
      assert.equal(calls.length, 5, `${id}: five engine calls`);
      assertChainExact(calls, recorded, id);
    }
  });
});
