/**
 * The head-of-line step of `deno task bench`: one agent's huge tool output against everyone
 * else's turns. The gateway as `deno task serve` runs it (one worker process, a KV file, the
 * scripted engine in its own process), first with `TOKENIZER_WORKERS=0` (encoding on the request's
 * event loop, as before the pool), then with the pool (`TOKENIZER_WORKERS=2`).
 *
 * For each: N sessions run Claude-Code-sized turns (`_claude_code_load.ts`) alone, then again
 * while another session sends spaceless tool results of 0.5, 1.5 and 4 MB, one after the other:
 * a base64 blob (digits and `+/` cut it into short pieces, so counting stops as soon as the
 * window is passed), then one run of letters (a single piece, encoded whole: no count can stop
 * it early). It prints the other sessions' p50/p99/worst turn time alone and during each kind,
 * each big turn's time to its answer (the 0.5 MB blob fits the 131,072-token window and is
 * answered; the others are refused), and the gateway main thread's CPU per Claude-Code-sized turn
 * with 64 sessions at once (the median of several rounds).
 *
 * `BENCH_HOL_SESSIONS` (8), `BENCH_HOL_TURNS` (240); `BENCH_FAST=1` (see `_harness.ts`): 2
 * sessions, 16 turns alone, tool results of 0.5 and 1.5 MB, and the CPU step 4 sessions × 2 turns,
 * 1 round.
 *
 * @module
 */
import {
  ADMIN,
  filler,
  isFast,
  median,
  percentile,
  setting,
  startEngineProcess,
} from "./_harness.ts";
import { body, opening, RESULT_LINES, sweep } from "./_claude_code_load.ts";
import { BASE64, blob } from "./_random.ts";
import { spawnGateway } from "../test/process/_gateway_process.ts";
import type { MessageParam } from "../lib/anthropic/mod.ts";

const SESSIONS = Number(setting("BENCH_HOL_SESSIONS", 8, 2));
/** Turns each other session runs before it starts over (its history stays Claude-Code-sized). */
const TURNS_PER_SESSION = 8;
/** Turns the other sessions run alone, in all. */
const ALONE_TURNS = Number(setting("BENCH_HOL_TURNS", 240, 16));
const SIZES_MB = isFast() ? [0.5, 1.5] : [0.5, 1.5, 4];
/** Sessions at once, and turns each, of the main-thread CPU step. */
const CPU_SESSIONS = isFast() ? 4 : 64;
const CPU_TURNS = isFast() ? 2 : 6;
/**
 * Rounds of the CPU step, after one not counted; its figure is their median. One round's reading
 * moved by ±15% between rounds here (the kernel's 10 ms ticks, the JIT, the collector's timing).
 */
const CPU_ROUNDS = isFast() ? 1 : 7;
/** Sessions of the warm-up round. */
const WARMUP_SESSIONS = isFast() ? 2 : 8;

const LETTERS = "abcdefghijklmnopqrstuvwxyz";

/** CPU milliseconds of thread `tid` of process `pid` so far. */
function threadCpuMs(pid: number, tid: number): number {
  const stat = Deno.readTextFileSync(`/proc/${pid}/task/${tid}/stat`);
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

async function post(url: string, token: string, text: string) {
  const at = performance.now();
  const response = await fetch(`${url}/v1/messages`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: text,
  });
  const json = await response.json();
  return { status: response.status, json, ms: performance.now() - at };
}

async function openSession(url: string): Promise<{ token: string }> {
  const response = await fetch(`${url}/sessions`, {
    method: "POST",
    headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" },
    body: "{}",
  });
  return await response.json();
}

/**
 * `count` sessions running turns until `done()` holds (and at least `minTurns` turns in all);
 * every turn's time at the client.
 */
async function others(url: string, count: number, done: () => boolean, minTurns: number) {
  const times: number[] = [];
  let salt = 50_000;
  await Promise.all(Array.from({ length: count }, async (_, s) => {
    while (!done() || times.length < minTurns) {
      const { token } = await openSession(url);
      const messages: MessageParam[] = opening(1_000 + s);
      for (let turn = 0; turn < TURNS_PER_SESSION; turn++) {
        const reply = await post(url, token, body(messages));
        if (reply.status !== 200) {
          throw new Error(`turn: ${reply.status} ${JSON.stringify(reply.json)}`);
        }
        times.push(reply.ms);
        messages.push({ role: "assistant", content: reply.json.content });
        messages.push({
          role: "user",
          content: [{
            type: "tool_result",
            tool_use_id: reply.json.content[0].id,
            content: filler(RESULT_LINES, salt++),
          }],
        });
        if (done() && times.length >= minTurns) break;
      }
    }
  }));
  return times;
}

/** One session whose second turn brings `text` as its tool result: that turn's status and time. */
async function bigTurn(url: string, text: string) {
  const { token } = await openSession(url);
  const messages: MessageParam[] = opening(9_999);
  const first = await post(url, token, body(messages));
  messages.push({ role: "assistant", content: first.json.content });
  messages.push({
    role: "user",
    content: [{ type: "tool_result", tool_use_id: first.json.content[0].id, content: text }],
  });
  const big = await post(url, token, body(messages));
  return { status: big.status, ms: big.ms, message: big.json.error?.message as string | undefined };
}

const stats = (times: number[]) =>
  `${percentile(times, 0.5).toFixed(1).padStart(7)} ${
    percentile(times, 0.99).toFixed(1).padStart(7)
  } ${Math.max(...times).toFixed(1).padStart(8)}`;

const KINDS = [
  { kind: "base64", alphabet: BASE64 },
  { kind: "one word", alphabet: LETTERS },
].map(({ kind, alphabet }) => ({
  kind,
  blobs: SIZES_MB.map((mb) => ({ mb, text: blob(Math.round(mb * 1_000_000), alphabet) })),
}));
const engine = await startEngineProcess();
console.log(
  `\nHead of line — ${SESSIONS} sessions of Claude-Code-sized turns, alone and while another ` +
    `sends ${SIZES_MB.join(", ")} MB spaceless tool results; one gateway process, ` +
    `CONTEXT_LENGTH 131072, engine: scripted, zero latency, own process`,
);
const cpuPerTurn: number[] = [];
for (const workers of [0, 2]) {
  const dir = await Deno.makeTempDir({ prefix: "bench-hol-" });
  const gateway = await spawnGateway({
    WORKERS: "1",
    TOKENIZER_WORKERS: String(workers),
    KV_PATH: `${dir}/bench.kv`,
    ADMIN_TOKEN: ADMIN,
    SGLANG_URL: engine.url,
    ROLLOUT_WORKER: "false",
  });
  try {
    // Warm-up: JIT, caches, the tokenizer workers.
    await sweep(gateway.url, WARMUP_SESSIONS, 3, 1_000);
    const alone = await others(gateway.url, SESSIONS, () => true, ALONE_TURNS);
    console.log(`\nTOKENIZER_WORKERS=${workers}`);
    console.log(`  other sessions' turns, ms           p50     p99    worst  (turns)`);
    console.log(`  alone                          ${stats(alone)}  (${alone.length})`);
    for (const { kind, blobs } of KINDS) {
      let finished = false;
      const results: { mb: number; status: number; ms: number }[] = [];
      const during = others(gateway.url, SESSIONS, () => finished, 0);
      for (const { mb, text } of blobs) results.push({ mb, ...await bigTurn(gateway.url, text) });
      finished = true;
      const mixed = await during;
      console.log(`  during the ${kind.padEnd(8)} turns      ${stats(mixed)}  (${mixed.length})`);
      console.log(
        `    big turns: ${
          results.map((result) => `${result.mb} MB ${result.status} in ${result.ms.toFixed(0)} ms`)
            .join(", ")
        }`,
      );
    }
    // The main thread's CPU per Claude-Code-sized turn with 64 sessions at once.
    const pid = gateway.pid;
    const rounds: number[] = [];
    for (let round = 0; round <= CPU_ROUNDS; round++) {
      const before = threadCpuMs(pid, pid);
      await sweep(gateway.url, CPU_SESSIONS, CPU_TURNS, 7_000 + round * 1_000);
      const perTurn = (threadCpuMs(pid, pid) - before) / (CPU_SESSIONS * CPU_TURNS);
      if (round > 0) rounds.push(perTurn);
    }
    rounds.sort((a, b) => a - b);
    const perTurn = median(rounds);
    cpuPerTurn.push(perTurn);
    console.log(
      `  main thread CPU per turn, ${CPU_SESSIONS} sessions × ${CPU_TURNS} turns: ${
        perTurn.toFixed(2)
      } ms (median of ${CPU_ROUNDS} rounds, ${rounds[0].toFixed(2)}–${rounds.at(-1)!.toFixed(2)})`,
    );
  } finally {
    await gateway.close();
    await Deno.remove(dir, { recursive: true });
  }
}
engine.process.kill("SIGTERM");
await engine.process.status;
console.log(
  `\nmain thread CPU per turn with the pool: ${
    (cpuPerTurn[1] / cpuPerTurn[0]).toFixed(2)
  }× the figure without it`,
);
