/**
 * The concurrency sweep of `deno task bench`: 1, 16, 64 and 256 sessions driving turns at once
 * through one gateway process (file KV, per-session leases, zero-latency scripted engine in its
 * own process). Prints turns per second and the p50/p99 gateway time per turn (the turn minus
 * the engine's own account of it), then the bytes KV holds per recorded chain token.
 *
 * `BENCH_SESSIONS` (1,16,64,256), `BENCH_SWEEP_TURNS` (8); `BENCH_FAST=1` (see `_harness.ts`): 1
 * and 4 sessions of 2 turns, after a warm-up round of 4.
 *
 * @module
 */
import type { MessageParam } from "../lib/anthropic/mod.ts";
import type { ChainHeader, TurnRecord } from "../lib/chain/mod.ts";
import { keys, parseKey } from "../lib/kv/mod.ts";
import {
  ADMIN,
  answer,
  filler,
  isFast,
  percentile,
  request,
  setting,
  startBenchGateway,
} from "./_harness.ts";

const SESSIONS = setting("BENCH_SESSIONS", "1,16,64,256", "1,4").split(",").map(Number);
const TURNS = Number(setting("BENCH_SWEEP_TURNS", 8, 2));
/** Sessions of the warm-up round (JIT, caches, connection pool). */
const WARMUP_SESSIONS = isFast() ? 4 : 16;

const gateway = await startBenchGateway();
const { deps, call } = gateway;
console.log(`\nConcurrency sweep — ${TURNS} turns per session, sessions running at once`);
console.log(
  `${"sessions".padStart(8)} ${"turns/s".padStart(8)} ${"p50 ms".padStart(7)} ${
    "p99 ms".padStart(7)
  }`,
);

/** Runs `count` sessions of TURNS turns at once; returns their ids and every turn's time. */
async function sweep(count: number) {
  const ids: string[] = [];
  const times: number[] = [];
  const started = performance.now();
  await Promise.all(Array.from({ length: count }, async (_, s) => {
    const session = await call("/sessions", ADMIN, {});
    ids.push(session.id);
    const messages: MessageParam[] = [{ role: "user", content: `Task ${s}.\n${filler(60, s)}` }];
    for (let turn = 0; turn < TURNS; turn++) {
      const body = JSON.stringify(request(messages));
      const at = performance.now();
      const reply = await call("/v1/messages", session.token, body);
      times.push(performance.now() - at);
      answer(messages, reply, `result ${turn}`);
    }
  }));
  return { ids, times, elapsed: (performance.now() - started) / 1000 };
}

await sweep(WARMUP_SESSIONS);

for (const count of SESSIONS) {
  const { ids, times, elapsed } = await sweep(count);
  const engine: number[] = [];
  for (const id of ids) {
    for await (const entry of deps.kv.list<TurnRecord>({ prefix: keys.sessionTurns(id) })) {
      engine.push(entry.value.timings.engineReportedMs);
    }
  }
  // Turn times and engine times are not paired one to one here; the engine's share is tiny
  // and nearly constant, so its median is taken off each percentile.
  const engineMedian = percentile(engine, 0.5);
  console.log(
    `${String(count).padStart(8)} ${(count * TURNS / elapsed).toFixed(0).padStart(8)} ${
      (percentile(times, 0.5) - engineMedian).toFixed(2).padStart(7)
    } ${(percentile(times, 0.99) - engineMedian).toFixed(2).padStart(7)}`,
  );
}

// What KV holds per recorded token: token chunks, and everything else (records, headers, keys).
let tokens = 0;
let chunkBytes = 0;
let otherBytes = 0;
for await (const entry of deps.kv.list({ prefix: [] })) {
  const keyBytes = JSON.stringify(entry.key).length;
  if (entry.value instanceof Uint8Array) chunkBytes += entry.value.byteLength + keyBytes;
  else otherBytes += JSON.stringify(entry.value).length + keyBytes;
  if (parseKey(entry.key).kind === "chain") tokens += (entry.value as ChainHeader).tokenCount;
}
const kvPath = gateway.kvPath;
await gateway.close().catch(() => {});
console.log(
  `\nKV per recorded chain token: ${((chunkBytes + otherBytes) / tokens).toFixed(2)} bytes ` +
    `(token chunks ${(chunkBytes / tokens).toFixed(2)}, records and keys ${
      (otherBytes / tokens).toFixed(2)
    }; ` +
    `${tokens} tokens in ${kvPath.slice(kvPath.lastIndexOf("/") + 1)})`,
);
