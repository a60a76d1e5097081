/**
 * `WORKERS=2`: one supervisor, two worker processes on one port and one KV file. The kernel
 * spreads connections across the workers, so a session's turns, each on its own connection, are
 * served by both in turn; the chain stays exact. A worker that dies is started again while the
 * other serves; stopping the supervisor stops both, and so does killing it.
 */
import assert from "node:assert/strict";
import { type ScriptedEngine, startScriptedEngine } from "../../lib/scripted_engine/mod.ts";
import { assertChainExact } from "../_chain_exact.ts";
import { qwen3 } from "../_gateway.ts";
import {
  bashCall,
  followUp,
  type GatewayProcess,
  openSession,
  type ReplyJson,
  samples,
  servingPids,
  spawnGateway,
  TOOLS,
} from "./_gateway_process.ts";
import { until } from "../engine/_client.ts";

/** Runs `body` against a two-worker gateway on a fresh KV file and a scripted engine. */
async function withWorkers(
  body: (gateway: GatewayProcess, engine: ScriptedEngine) => Promise<void>,
) {
  const engine = await startScriptedEngine({
    tokenizer: await qwen3(),
    script: (call) => bashCall(`step ${call.inputIds.length}`),
  });
  const dir = await Deno.makeTempDir({ prefix: "workers_" });
  const gateway = await spawnGateway({
    KV_PATH: `${dir}/gateway.kv`,
    SGLANG_URL: engine.url,
    WORKERS: "2",
  });
  try {
    await body(gateway, engine);
  } finally {
    await gateway.close();
    await engine.close();
    await Deno.remove(dir, { recursive: true });
  }
}

/** The two worker pids the supervisor's banner names. */
function workerPids(gateway: GatewayProcess): number[] {
  const pids = servingPids(gateway);
  assert.equal(pids.length, 2, gateway.output());
  return pids;
}

const alive = (pid: number) => {
  try {
    Deno.statSync(`/proc/${pid}`);
    return true;
  } catch {
    return false;
  }
};

/** One turn on a connection of its own; returns the reply and the worker that served it. */
async function turnOnNewConnection(url: string, token: string, messages: unknown[]) {
  const client = Deno.createHttpClient({});
  try {
    const response = await fetch(`${url}/v1/messages`, {
      client,
      method: "POST",
      headers: { "x-api-key": token, "content-type": "application/json" },
      body: JSON.stringify({ model: "m", max_tokens: 256, tools: TOOLS, messages }),
    });
    assert.equal(response.status, 200, await response.clone().text());
    return {
      reply: await response.json() as ReplyJson,
      worker: response.headers.get("x-gateway-worker"),
    };
  } finally {
    client.close();
  }
}

/** Drives one session until both workers served turns and it moved between them `switches` times. */
async function driveAcrossWorkers(gateway: GatewayProcess, token: string, switches: number) {
  let messages: unknown[] = [{ role: "user", content: "Run the steps." }];
  const served: string[] = [];
  const moves = () => served.filter((worker, k) => k > 0 && worker !== served[k - 1]).length;
  // Each connection lands on either worker; 60 turns leave no real chance of fewer moves.
  while (moves() < switches && served.length < 60) {
    const { reply, worker } = await turnOnNewConnection(gateway.url, token, messages);
    assert.ok(worker === "0" || worker === "1", `served by ${worker}`);
    served.push(worker);
    messages = followUp(messages, reply, served.length);
  }
  assert.ok(moves() >= switches, `the session moved between workers: ${served.join("")}`);
  return served;
}

Deno.test("two workers on one port serve one session alternately, and its chain stays exact", async () => {
  await withWorkers(async (gateway, engine) => {
    assert.match(
      gateway.output(),
      /Rollout Gateway listening on http:\/\/127\.0\.0\.1:\d+ \(this machine only: [^)]*\) with 2 workers/,
    );
    // Each worker runs with the heap limit of its budget (the supervisor's DENO_V8_FLAGS): the
    // banner gives no flag to set. Worker 0's details follow its ready line.
    await until(() => gateway.output().includes("memory:"));
    assert.match(
      gateway.output(),
      /memory: +budget \d+ MiB \(caches up to \d+ MiB\); V8 heap limit \d+ MiB; freed memory given back every 30 s/,
    );
    const { id, token } = await openSession(gateway.url);
    const served = await driveAcrossWorkers(gateway, token, 3);
    assert.equal(engine.calls.length, served.length);
    const recorded = await samples(gateway.url, id);
    assertChainExact(engine.calls, recorded);
    assert.ok(recorded[0].turns.every((turn) => turn.flags.length === 0), "no turn was flagged");
  });
});

Deno.test("a worker that dies is started again; stopping the supervisor stops every worker", async () => {
  await withWorkers(async (gateway, engine) => {
    const [first, second] = workerPids(gateway);
    const { id, token } = await openSession(gateway.url);
    let messages: unknown[] = [{ role: "user", content: "Run the steps." }];
    const { reply } = await turnOnNewConnection(gateway.url, token, messages);
    messages = followUp(messages, reply, 0);
    Deno.kill(second, "SIGKILL");
    await until(() => /Worker 1 exited \(SIGKILL\); restarting it/.test(gateway.output()), 10_000);
    // Worker 0 serves alone until worker 1 is back.
    for (let k = 1; k < 4; k++) {
      const next = await turnOnNewConnection(gateway.url, token, messages);
      assert.equal(next.worker, "0");
      messages = followUp(messages, next.reply, k);
    }
    await until(() => readyPids(gateway, 1).length === 2, 60_000);
    const restarted = readyPids(gateway, 1)[1];
    assert.notEqual(restarted, second);
    assertChainExact(engine.calls, await samples(gateway.url, id));

    const status = await gateway.kill("SIGTERM");
    assert.equal(status.code, 0, gateway.output());
    assert.ok(!alive(first) && !alive(restarted), "no worker outlives its supervisor");
  });
});

/** The pids worker `index` has listened under, in order. */
function readyPids(gateway: GatewayProcess, index: number): number[] {
  const ready = new RegExp(`Worker ${index} \\(pid (\\d+)\\) ready`, "g");
  return [...gateway.output().matchAll(ready)].map((match) => Number(match[1]));
}

Deno.test("a supervisor killed outright takes its workers with it", async () => {
  await withWorkers(async (gateway) => {
    const pids = workerPids(gateway);
    await gateway.kill("SIGKILL");
    await until(() => !pids.some(alive), 20_000);
  });
});
