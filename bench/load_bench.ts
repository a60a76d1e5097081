/**
 * The load sweep of `deno task bench`: the gateway as `deno task serve` runs it (separate
 * processes over HTTP, a KV file), with 1 and then 2 workers, driven by 1, 16, 64 and 256
 * sessions at once. Every request is Claude-Code-sized: a recorded Claude Code system prompt and
 * tool list plus a project-notes message, about 12k tokens, then a history growing by a ~500-token
 * tool result per turn. The scripted engine (zero latency) runs in its own process, and the
 * driver in this one: all share this machine's cores.
 *
 * Prints turns/s and the p50/p99 request time at the client; the p50 gateway time of a turn
 * after the first (the turn minus the engine's part, from the turn records) next to what the
 * tokenizer alone takes to encode that turn's new tokens, both as the gateway encodes (its faster
 * byte-level step, `lib/tokenizer/byte_level.ts`) and as the library alone does; the CPU time per
 * turn of the gateway's processes, the engine's and the driver's, which share the cores, and the
 * turns/s the gateway's share alone allows on all of them; and the workers' RSS after each step.
 * Last, one worker's RSS as rounds of 64 new sessions accumulate, none closed, with the default
 * chain cache and with a small one.
 *
 * `BENCH_LOAD_SESSIONS` (1,16,64,256), `BENCH_LOAD_WORKERS` (1,2), `BENCH_LOAD_TURNS` (6),
 * `BENCH_OPEN_ROUNDS` (10); `BENCH_FAST=1` (see `_harness.ts`): 1 and 4 sessions of 2 turns (10
 * for one alone) on 1 and 2 workers, and 1 round of 8 new sessions per chain cache.
 *
 * @module
 */
import type { TurnRecord } from "../lib/chain/mod.ts";
import { keys } from "../lib/kv/mod.ts";
import { defaultTokenizerPath } from "../lib/config/mod.ts";
import { libraryTokenizer, loadTokenizer } from "../lib/tokenizer/mod.ts";
import { ADMIN, filler, isFast, percentile, setting, startEngineProcess } from "./_harness.ts";
import { body, opening, RESULT_LINES, sweep } from "./_claude_code_load.ts";
import { cpuMs, residentMiB } from "../lib/sandbox/mod.ts";
import { servingPids, spawnGateway } from "../test/process/_gateway_process.ts";

const SESSIONS = setting("BENCH_LOAD_SESSIONS", "1,16,64,256", "1,4").split(",").map(Number);
const WORKERS = setting("BENCH_LOAD_WORKERS", "1,2", "1,2").split(",").map(Number);
const TURNS = Number(setting("BENCH_LOAD_TURNS", 6, 2));
/** Rounds of new sessions, and sessions per round, of the open-sessions memory step. */
const OPEN_ROUNDS = Number(setting("BENCH_OPEN_ROUNDS", 10, 1));
const OPEN_PER_ROUND = isFast() ? 8 : 64;
/**
 * Turns of the one-session step: its median moved by ±0.2 ms between runs with 30; with 120
 * (the history grows to ~95k tokens) by a few hundredths.
 */
const SOLO_TURNS = isFast() ? 10 : 120;
/** Sessions of the warm-up round. */
const WARMUP_SESSIONS = isFast() ? 2 : 8;
/** Encodes of a tool result not timed, then timed, for the encode figures. */
const ENCODE_WARMUP = isFast() ? 10 : 100;
const ENCODE_RUNS = isFast() ? 20 : 200;
/** Fewest turns in a step for its CPU time per turn to be shown. */
const MIN_CPU_TURNS = 60;
/** This machine's cores. */
const CORES = navigator.hardwareConcurrency;
/** `functions/serve.ts` with `workers` workers over a fresh KV file. */
async function startGateway(workers: number, engineUrl: string, env: Record<string, string> = {}) {
  const dir = await Deno.makeTempDir({ prefix: "bench-load-" });
  const kvPath = `${dir}/bench.kv`;
  const gateway = await spawnGateway({
    WORKERS: String(workers),
    KV_PATH: kvPath,
    ADMIN_TOKEN: ADMIN,
    SGLANG_URL: engineUrl,
    CONTEXT_LENGTH: "200000",
    ROLLOUT_WORKER: "false",
    ...env,
  });
  return {
    url: gateway.url,
    pids: servingPids(gateway),
    kvPath,
    stop: async () => {
      await gateway.close();
      await Deno.remove(dir, { recursive: true });
    },
  };
}

// What the tokenizer alone takes for a turn's new tokens: the tool result, as text.
const tokenizer = await loadTokenizer(defaultTokenizerPath());
const delta = filler(RESULT_LINES, 7);
const deltaTokens = tokenizer.encode(delta).length;
const encodeMs = encodeTime((text) => tokenizer.encode(text));
// The same with the library's own tokenizer, as `@huggingface/transformers` loads it.
const library = await libraryTokenizer(defaultTokenizerPath());
const libraryEncodeMs = encodeTime((text) => library.encode(text, { add_special_tokens: false }));

/**
 * The p50 time `encode` takes on a turn's tool result, warmed up first (the library's time moved
 * by 2× between runs with less).
 */
function encodeTime(encode: (text: string) => number[]): number {
  for (let i = 0; i < ENCODE_WARMUP; i++) encode(filler(RESULT_LINES, i));
  const times = Array.from({ length: ENCODE_RUNS }, (_, i) => {
    const text = filler(RESULT_LINES, 100 + i);
    const at = performance.now();
    encode(text);
    return performance.now() - at;
  });
  return percentile(times, 0.5);
}

/** CPU milliseconds used so far by `pids` together. */
const cpuOf = (pids: readonly number[]) => pids.reduce((sum, pid) => sum + (cpuMs(pid) ?? 0), 0);
const firstPrompt = tokenizer.encode(body(opening(0))).length;

const engine = await startEngineProcess();
console.log(
  `\nLoad sweep — ${TURNS} turns per session (${
    Math.max(TURNS, SOLO_TURNS)
  } for one alone) over HTTP; first request ~${firstPrompt} tokens ` +
    `of JSON (recorded Claude Code system prompt and tools, project notes), then +${deltaTokens}-token ` +
    `tool results; engine: scripted, zero latency, own process`,
);
console.log(
  `${"workers".padStart(7)} ${"sessions".padStart(8)} ${"turns/s".padStart(8)} ${
    "p50 ms".padStart(7)
  } ${"p99 ms".padStart(8)} ${"gateway ms".padStart(10)} ${"encode ms".padStart(9)} ${
    "library ms".padStart(10)
  } ${"CPU ms/turn: gateway".padStart(20)} ${"engine".padStart(6)} ${"driver".padStart(6)} ${
    "gateway alone/s".padStart(15)
  } ${"RSS MiB".padStart(12)}`,
);
for (const workers of WORKERS) {
  const gateway = await startGateway(workers, engine.url);
  // Warm-up: JIT, caches, connection pools; a lone session too, whose small texts the event
  // loop encodes itself (under load they go to the tokenizer workers).
  await sweep(gateway.url, WARMUP_SESSIONS, TURNS, 1_000);
  await sweep(gateway.url, 1, SOLO_TURNS, 2_000);
  for (const count of SESSIONS) {
    // One session alone gives the gateway's time of a turn without queueing, the figure set
    // against the encode times: it runs more turns, so its median is not of five.
    const turns = count === 1 ? Math.max(TURNS, SOLO_TURNS) : TURNS;
    const cpu = [cpuOf(gateway.pids), cpuOf([engine.process.pid]), cpuOf([Deno.pid])];
    const { ids, times, elapsed } = await sweep(gateway.url, count, turns, count * 7);
    // CPU time comes in 10 ms ticks: too coarse for a step of a few turns.
    const used = [cpuOf(gateway.pids), cpuOf([engine.process.pid]), cpuOf([Deno.pid])]
      .map((now, i) => (now - cpu[i]) / (count * turns));
    const coarse = count * turns < MIN_CPU_TURNS;
    const perTurn = used.map((ms) => coarse ? "–" : ms.toFixed(2));
    // The turns/s the gateway's own CPU time allows on every core of this machine, were the
    // engine and the agents elsewhere (as they are in a deployment).
    const alone = coarse ? "–" : (CORES * 1000 / used[0]).toFixed(0);
    const rss = gateway.pids.map((pid) => residentMiB(pid) ?? "?").join("+");
    const kv = await Deno.openKv(gateway.kvPath);
    const gatewayMs: number[] = [];
    for (const id of ids) {
      for await (const entry of kv.list<TurnRecord>({ prefix: keys.sessionTurns(id) })) {
        const turn = entry.value;
        if (turn.index === 0) continue; // the first turn encodes the whole 12k-token prompt
        gatewayMs.push(turn.timings.totalMs - turn.timings.engineMs);
      }
    }
    kv.close();
    console.log(
      `${String(workers).padStart(7)} ${String(count).padStart(8)} ${
        (count * turns / elapsed).toFixed(0).padStart(8)
      } ${percentile(times, 0.5).toFixed(1).padStart(7)} ${
        percentile(times, 0.99).toFixed(1).padStart(8)
      } ${percentile(gatewayMs, 0.5).toFixed(2).padStart(10)} ${encodeMs.toFixed(2).padStart(9)} ${
        libraryEncodeMs.toFixed(2).padStart(10)
      } ${perTurn[0].padStart(20)} ${perTurn[1].padStart(6)} ${perTurn[2].padStart(6)} ${
        alone.padStart(15)
      } ${rss.padStart(12)}`,
    );
  }
  await gateway.stop();
}

// Memory against sessions held open: rounds of new sessions on one worker, none ever closed; with
// the default chain cache, then with one small enough to fill early.
for (const cache of [null, "1000000"]) {
  const gateway = await startGateway(1, engine.url, cache ? { CHAIN_CACHE_TOKENS: cache } : {});
  const open: string[] = [];
  for (let round = 1; round <= OPEN_ROUNDS; round++) {
    await sweep(gateway.url, OPEN_PER_ROUND, TURNS, 100_000 + round * OPEN_PER_ROUND);
    open.push(
      `${round * OPEN_PER_ROUND}: ${gateway.pids.map((pid) => residentMiB(pid)).join("+")}`,
    );
  }
  await gateway.stop();
  console.log(
    `${cache ? "" : "\n"}RSS MiB of one worker by sessions open (${TURNS} turns each), ` +
      `CHAIN_CACHE_TOKENS=${cache ?? "default"}: ${open.join(", ")}`,
  );
}
engine.process.kill("SIGTERM");
await engine.process.status;
console.log(
  `\ngateway ms: a later turn's time in the gateway (its record's total minus the engine call), ` +
    `p50; encode ms: the gateway's tokenizer alone on that turn's ${deltaTokens}-token tool ` +
    `result, p50; library ms: the same with @huggingface/transformers' own tokenizer; CPU ms/turn: ` +
    `CPU time of the gateway's processes, the engine's and this driver's, over the step's turns; ` +
    `gateway alone/s: the turns/s the gateway's CPU time per turn allows on all ${CORES} cores, ` +
    `were the engine and the agents on other machines`,
);
