/**
 * The store bench of `deno task bench`: what PostgreSQL costs a turn against the KV file.
 *
 * 1. A later Claude-Code-sized turn (~12k tokens of system prompt, tools and notes, a growing
 *    history), in process against the zero-latency scripted engine in its own process: the
 *    store round trips it makes (each get, getMany, listing and commit), and its time in the
 *    gateway — the whole request as the caller sees it, its commit included, less the engine call
 *    the turn record names — p50 over `BENCH_STORE_TURNS` turns, on a KV file and on PostgreSQL
 *    (a throwaway cluster on this machine, over loopback).
 * 2. Turns/s at 64 sessions of 6 turns over HTTP: one host on the KV file, one host on
 *    PostgreSQL, and two hosts (two processes, each its own folder) on PostgreSQL, the sessions
 *    split between them. Every process shares this machine's two cores with the engine, the
 *    database and the driver: the two-host figure shows the store shared, not two machines' CPU.
 *
 * `BENCH_STORE_TURNS` (40), `BENCH_STORE_SESSIONS` (64); `BENCH_FAST=1` (see `_harness.ts`): 4
 * turns, and 4 sessions of 2 turns.
 *
 * @module
 */
import type { TurnRecord } from "../lib/chain/mod.ts";
import { keys, type Store } from "../lib/kv/mod.ts";
import {
  ADMIN,
  isFast,
  median,
  setting,
  startBenchGateway,
  startEngineProcess,
} from "./_harness.ts";
import { answered, body, opening, sweep } from "./_claude_code_load.ts";
import { spawnGateway } from "../test/process/_gateway_process.ts";
import { startPostgres } from "../test/_postgres.ts";

const TURNS = Number(setting("BENCH_STORE_TURNS", 40, 4));
const SESSIONS = Number(setting("BENCH_STORE_SESSIONS", 64, 4));
const SWEEP_TURNS = isFast() ? 2 : 6;

/** Counts every store operation made through `kv` (each one round trip). */
function counted(kv: Store): { count: number } {
  const counter = { count: 0 };
  const wrap = <F extends (...args: never[]) => unknown>(f: F) =>
    ((...args: Parameters<F>) => (counter.count++, f(...args))) as unknown as F;
  kv.get = wrap(kv.get.bind(kv));
  kv.getMany = wrap(kv.getMany.bind(kv));
  kv.list = wrap(kv.list.bind(kv));
  const atomic = kv.atomic.bind(kv);
  kv.atomic = () => {
    const op = atomic();
    op.commit = wrap(op.commit.bind(op));
    return op;
  };
  return counter;
}

/** Round trips and gateway ms of the later turns of one session on the store `env` names. */
async function laterTurns(env: Record<string, string>) {
  const gateway = await startBenchGateway(env);
  try {
    const trips = counted(gateway.deps.kv);
    const session = await gateway.call("/sessions", ADMIN, {});
    const messages = opening(0);
    const perTurn: number[] = [];
    const wallMs: number[] = [];
    for (let turn = 0; turn < TURNS + 2; turn++) {
      const before = trips.count;
      const started = performance.now();
      const reply = await gateway.call("/v1/messages", session.token, body(messages));
      if (turn >= 2) (perTurn.push(trips.count - before), wallMs.push(performance.now() - started));
      answered(messages, reply, turn);
    }
    const engineMs: number[] = [];
    for await (
      const entry of gateway.deps.kv.list<TurnRecord>({ prefix: keys.sessionTurns(session.id) })
    ) {
      if (entry.value.index >= 2) engineMs.push(entry.value.timings.engineMs);
    }
    const gatewayMs = wallMs.map((ms, i) => ms - engineMs[i]);
    return { trips: median(perTurn), most: Math.max(...perTurn), gatewayMs: median(gatewayMs) };
  } finally {
    await gateway.close();
  }
}

/** Turns/s of `SESSIONS` sessions over `hosts` gateway processes on the store `env` names. */
async function throughput(hosts: number, env: Record<string, string>, engineUrl: string) {
  const folders: string[] = [];
  const gateways = [];
  try {
    for (let i = 0; i < hosts; i++) {
      const folder = await Deno.makeTempDir({ prefix: "bench-store-" });
      folders.push(folder);
      gateways.push(
        await spawnGateway({
          WORKERS: "1",
          KV_PATH: `${folder}/bench.kv`,
          ADMIN_TOKEN: ADMIN,
          ENGINE_URL: engineUrl,
          HOST_ID: `bench-${i}`,
          CONTEXT_LENGTH: "200000",
          ROLLOUT_WORKER: "false",
          ...env,
        }, folder),
      );
    }
    const started = performance.now();
    await Promise.all(
      gateways.map((gateway, i) =>
        sweep(gateway.url, SESSIONS / hosts, SWEEP_TURNS, 1000 * (i + 1))
      ),
    );
    return SESSIONS * SWEEP_TURNS / ((performance.now() - started) / 1000);
  } finally {
    for (const gateway of gateways) await gateway.close();
    for (const folder of folders) await Deno.remove(folder, { recursive: true });
  }
}

const cluster = await startPostgres();
try {
  console.log("Rollout Gateway store bench — a KV file against PostgreSQL on this machine\n");
  const kv = await laterTurns({});
  const pg = await laterTurns({ STORE_URL: await cluster.database() });
  console.log(`later Claude-Code-sized turn (p50 of ${TURNS})   KV file   PostgreSQL   ratio`);
  console.log(
    `  store round trips                      ${String(kv.trips).padStart(7)} ${
      String(pg.trips).padStart(12)
    }   (most ${kv.most} / ${pg.most})`,
  );
  console.log(
    `  gateway ms                             ${kv.gatewayMs.toFixed(2).padStart(7)} ${
      pg.gatewayMs.toFixed(2).padStart(12)
    } ${(pg.gatewayMs / kv.gatewayMs).toFixed(2).padStart(7)}×`,
  );
  const engine = await startEngineProcess();
  try {
    const oneKv = await throughput(1, {}, engine.url);
    const onePg = await throughput(1, { STORE_URL: await cluster.database() }, engine.url);
    const twoPg = await throughput(2, { STORE_URL: await cluster.database() }, engine.url);
    console.log(`\n${SESSIONS} sessions × ${SWEEP_TURNS} Claude-Code-sized turns, turns/s`);
    console.log(`  one host, KV file                      ${oneKv.toFixed(0).padStart(7)}`);
    console.log(`  one host, PostgreSQL                   ${onePg.toFixed(0).padStart(7)}`);
    console.log(`  two hosts, PostgreSQL                  ${twoPg.toFixed(0).padStart(7)}`);
  } finally {
    engine.process.kill("SIGTERM");
    await engine.process.status;
  }
} finally {
  await cluster.close();
}
