/**
 * A gateway process killed with SIGKILL while a turn generates: another process on the same KV
 * file continues the session once the dead holder's lease runs out; no committed turn is lost
 * or changed, and nothing of the killed attempt is visible.
 */
import assert from "node:assert/strict";
import { startScriptedEngine } from "../../lib/scripted_engine/mod.ts";
import { keys, type Lease, parseKey } from "../../lib/kv/mod.ts";
import { assertChainExact } from "../_chain_exact.ts";
import { qwen3 } from "../_gateway.ts";
import {
  bashCall,
  followUp,
  type GatewayProcess,
  openSession,
  postMessages,
  samples,
  spawnGateway,
} from "./_gateway_process.ts";

const LEASE_TTL_MS = 3000;

/** Polls `condition` every 10 ms until it holds, failing after `deadlineMs`. */
async function until(condition: () => boolean, what: string, deadlineMs = 10_000) {
  const deadline = Date.now() + deadlineMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`Timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** Every key of the session's records, as JSON, for finding what an attempt wrote. */
async function sessionKeys(kv: Deno.Kv, sessionId: string): Promise<string[]> {
  const out: string[] = [];
  const prefixes = [
    keys.session(sessionId),
    keys.chains(sessionId),
    keys.sessionTurns(sessionId),
    keys.sessionChunks(sessionId),
    keys.replays(sessionId),
    keys.lease(sessionId),
  ];
  for (const prefix of prefixes) {
    for await (const entry of kv.list({ prefix })) {
      out.push(JSON.stringify(entry.key));
    }
  }
  return out;
}

Deno.test("a gateway killed mid-turn loses no committed turn, leaves no half turn, and its lease runs out", async () => {
  const engine = await startScriptedEngine({
    tokenizer: await qwen3(),
    script: [
      bashCall("ls"),
      bashCall("cat a"),
      // About 30 tokens at 2 s each: it is still generating when its gateway is killed.
      { text: bashCall("cat b"), latencyMs: 2000 },
      bashCall("cat b"),
    ],
  });
  const dir = await Deno.makeTempDir({ prefix: "gateway_crash_" });
  const kvPath = `${dir}/gateway.kv`;
  const env = {
    KV_PATH: kvPath,
    SGLANG_URL: engine.url,
    LEASE_TTL_MS: String(LEASE_TTL_MS),
    LOCK_WAIT_MS: "10000",
  };
  const processes: GatewayProcess[] = [];
  const spawn = async () => {
    const gateway = await spawnGateway(env);
    processes.push(gateway);
    return gateway;
  };
  let kv: Deno.Kv | null = null;
  try {
    const a = await spawn();
    const { id, token } = await openSession(a.url);
    let messages: unknown[] = [{ role: "user", content: "Look around." }];
    for (let k = 0; k < 2; k++) {
      const response = await postMessages(a.url, token, messages);
      assert.equal(response.status, 200, await response.clone().text());
      messages = followUp(messages, await response.json(), k);
    }
    const [before] = await samples(a.url, id);
    assert.equal(before.turns.length, 2);

    // A standby process on the same file, started before the crash, so that the retry below
    // meets the dead holder's lease still running (a process that starts after it ran out
    // would not have to wait). A third process, opened after the crash, reads the result.
    const b = await spawn();
    const third = postMessages(a.url, token, messages).then(
      async (response) => `answered ${response.status}: ${await response.text()}`,
      (error: unknown) => error,
    );
    await until(() => engine.calls.length === 3, "the engine received the third turn's call");
    const killedCall = engine.calls[2];
    kv = await Deno.openKv(kvPath);
    const held = (await kv.get<Lease>(keys.chainLease(id, "c0"))).value;
    const readAt = Date.now();
    assert.ok(held, "A holds the chain's lease while the turn generates");
    assert.ok(held.holder.startsWith(`${Deno.hostname()}:${a.pid}/`), held.holder);
    assert.ok(held.expiresAt > readAt, "the lease is live");
    assert.ok(held.expiresAt - readAt <= LEASE_TTL_MS, "and ends within LEASE_TTL_MS");

    const status = await a.kill("SIGKILL");
    const killedAt = Date.now();
    assert.equal(status.signal, "SIGKILL");
    assert.ok(await third instanceof TypeError, `A's client saw its connection fail`);
    const left = (await kv.get<Lease>(keys.chainLease(id, "c0"))).value;
    assert.ok(left, "the dead holder's lease stays until it runs out");
    assert.equal(left.holder, held.holder);
    assert.ok(left.expiresAt <= killedAt + LEASE_TTL_MS, "it runs out within LEASE_TTL_MS");
    assert.equal(
      (await sessionKeys(kv, id)).filter((key) => key.includes(killedCall.rid)).length,
      0,
      "the killed attempt wrote nothing",
    );

    // The agent retries the same request on the other process: it waits for the lease.
    const sentAt = Date.now();
    assert.ok(sentAt < left.expiresAt, "precondition: the retry arrives while the lease is live");
    const retry = await postMessages(b.url, token, messages);
    assert.equal(retry.status, 200, await retry.clone().text());
    assert.match(JSON.stringify((await retry.json()).content), /cat b/);
    assert.equal(engine.calls.length, 4);
    const retryCall = engine.calls[3];
    assert.ok(retryCall.receivedAt >= left.expiresAt, "B generated only after the lease ran out");
    assert.deepEqual(retryCall.inputIds, killedCall.inputIds, "B rebuilt the same prompt from KV");
    assert.equal((await kv.get(keys.chainLease(id, "c0"))).value, null, "B released the lease");

    const c = await spawn();
    const after = await samples(c.url, id);
    assert.deepEqual(await samples(b.url, id), after);
    const recorded = [engine.calls[0], engine.calls[1], retryCall];
    assertChainExact(recorded, after);
    const [sample] = after;
    assert.equal(sample.turns.length, 3);
    assert.deepEqual(sample.turns.slice(0, 2), before.turns, "the committed turns are unchanged");
    assert.deepEqual(sample.prompt_ids, before.prompt_ids);
    for (const field of ["response_ids", "loss_mask", "logprobs"] as const) {
      assert.deepEqual(sample[field].slice(0, before[field].length), before[field], field);
    }
    // Exactly three turn records exist, none of them the killed attempt's.
    const turnRids: string[] = [];
    for await (const entry of kv.list({ prefix: keys.sessionTurns(id) })) {
      const key = parseKey(entry.key);
      if (key.kind === "turn") turnRids.push(key.rid);
    }
    assert.deepEqual(turnRids.sort(), recorded.map((call) => call.rid).sort());
    assert.equal(
      (await sessionKeys(kv, id)).filter((key) => key.includes(killedCall.rid)).length,
      0,
      "nothing of the killed attempt is visible after the retry",
    );
  } finally {
    kv?.close();
    for (const gateway of processes) await gateway.close();
    await engine.close();
    await Deno.remove(dir, { recursive: true });
  }
});
