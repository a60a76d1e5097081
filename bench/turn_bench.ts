/**
 * `deno task bench`: the gateway's time per turn at histories of about 1k, 30k, 120k and 256k
 * tokens, against the zero-latency scripted engine in its own process, beside a naive baseline
 * that re-renders and re-tokenizes the whole history each turn (what T4 rules out).
 *
 * Figures are medians over the measured turns. "turn" is the whole `/v1/messages` request as the
 * agent sees it (body parsing, routing, delta rendering, the engine round trip, the KV commit);
 * "engine" is the engine's own account of its time (`meta_info.e2e_latency`: for the scripted
 * engine, mostly parsing the prompt's ids); "gateway" is the turn minus the engine, the part the
 * gateway spends itself, which T4 is about; "naive" is only the re-render + re-tokenize of the
 * history that a naive gateway does per turn, without anything else.
 *
 * `BENCH_FAST=1` (see `_harness.ts`): histories of about 1k and 30k tokens, 3 measured turns after
 * 1 warm-up turn.
 *
 * @module
 */
import { lowerMessages, lowerSystem, lowerTools, type MessageParam } from "../lib/anthropic/mod.ts";
import type { TurnRecord } from "../lib/chain/mod.ts";
import { keys } from "../lib/kv/mod.ts";
import {
  ADMIN,
  answer,
  filler,
  isFast,
  median,
  request,
  setting,
  startBenchGateway,
  SYSTEM,
  TOOLS,
} from "./_harness.ts";

/** History sizes measured, in tokens (`BENCH_TARGETS=1000,120000` to choose). */
const TARGETS = setting("BENCH_TARGETS", "1000,30000,120000,256000", "1000,30000").split(",")
  .map(Number);
const MEASURED_TURNS = Number(setting("BENCH_TURNS", 40, 3));
const WARMUP_TURNS = isFast() ? 1 : 5;
const NAIVE_RUNS = 5;

const gateway = await startBenchGateway();
const { deps, tokenizer, call } = gateway;

console.log(`Rollout Gateway turn bench — ${MEASURED_TURNS} measured turns per history size`);
console.log(`engine: scripted, zero latency, own process (${gateway.engineUrl}); KV: file\n`);
const conversations: Conversation[] = [];
for (const target of TARGETS) conversations.push(await grow(target));
// Warm up, then measure the sizes in turn, so drift (JIT, GC, the machine) hits them alike.
for (let i = 0; i < WARMUP_TURNS; i++) for (const c of conversations) await turn(c, false);
for (let i = 0; i < MEASURED_TURNS; i++) for (const c of conversations) await turn(c, true);
const rows = await Promise.all(conversations.map(summarize));

const pad = (v: string | number, n: number) => String(v).padStart(n);
const ms = (v: number) => v.toFixed(2);
console.log(
  `${pad("history", 8)} ${pad("tokens", 8)} ${pad("turn ms", 8)} ${pad("engine ms", 10)} ${
    pad("gateway ms", 11)
  } ${pad("naive ms", 9)}`,
);
for (const r of rows) {
  console.log(
    `${pad(`~${r.target / 1000}k`, 8)} ${pad(r.history, 8)} ${pad(ms(r.turn), 8)} ${
      pad(ms(r.engine), 10)
    } ${pad(ms(r.gateway), 11)} ${pad(ms(r.naive), 9)}`,
  );
}
if (rows.length > 1) {
  const [small, large] = [rows[0], rows.at(-1)!];
  const ratio = (key: "turn" | "gateway" | "naive") => (large[key] / small[key]).toFixed(2);
  const sizes = `~${large.target / 1000}k / ~${small.target / 1000}k`;
  console.log(
    `\nratio ${sizes}:  gateway ${
      ratio("gateway")
    }×  (goal ≤ 1.5×: a turn costs work in its new tokens, T4)`,
  );
  console.log(`${" ".repeat(sizes.length + 8)}turn ${ratio("turn")}×  naive ${ratio("naive")}×`);
}

await gateway.close();

/** One session and the client side of its conversation. */
interface Conversation {
  readonly target: number;
  readonly sessionId: string;
  readonly token: string;
  readonly messages: MessageParam[];
  // deno-lint-ignore no-explicit-any
  reply: any;
  readonly times: number[];
  readonly sizes: number[];
}

/** A session grown to a little under `target` tokens, so the measured turns straddle it. */
async function grow(target: number): Promise<Conversation> {
  const session = await call("/sessions", ADMIN, {});
  const messages: MessageParam[] = [{ role: "user", content: "Run the tests and fix what fails." }];
  const c: Conversation = {
    target,
    sessionId: session.id,
    token: session.token,
    messages,
    reply: await call("/v1/messages", session.token, request(messages)),
    times: [],
    sizes: [],
  };
  const start = target - 20 * (MEASURED_TURNS + WARMUP_TURNS); // a turn adds about 40 tokens
  while (c.reply.usage.input_tokens + 40 < start) {
    answer(
      messages,
      c.reply,
      filler(Math.min(600, Math.ceil((start - c.reply.usage.input_tokens) / 14)), messages.length),
    );
    c.reply = await call("/v1/messages", c.token, request(messages));
  }
  return c;
}

/** One small turn; timed when `measured`. */
async function turn(c: Conversation, measured: boolean): Promise<void> {
  answer(c.messages, c.reply, `ok ${c.messages.length}`);
  const body = JSON.stringify(request(c.messages)); // the agent's work, not the gateway's
  const started = performance.now();
  c.reply = await call("/v1/messages", c.token, body);
  if (!measured) return;
  c.times.push(performance.now() - started);
  c.sizes.push(c.reply.usage.input_tokens);
}

/** Medians of the measured turns, and the naive baseline at the final history. */
async function summarize(c: Conversation) {
  const records: TurnRecord[] = [];
  for await (const entry of deps.kv.list<TurnRecord>({ prefix: keys.turns(c.sessionId, "c0") })) {
    records.push(entry.value);
  }
  const engineTimes = records.slice(-MEASURED_TURNS).map((r) => r.timings.engineReportedMs);
  const prompt = {
    messages: [
      { role: "system" as const, content: lowerSystem(SYSTEM) },
      ...lowerMessages(c.messages),
    ],
    tools: lowerTools(TOOLS),
  };
  const naiveTimes: number[] = [];
  for (let i = 0; i < NAIVE_RUNS; i++) {
    const started = performance.now();
    tokenizer.encode(tokenizer.render(prompt, true));
    naiveTimes.push(performance.now() - started);
  }
  return {
    target: c.target,
    history: median(c.sizes),
    turn: median(c.times),
    engine: median(engineTimes),
    gateway: median(c.times.map((time, i) => time - engineTimes[i])),
    naive: median(naiveTimes),
  };
}
