/**
 * `deno task bench`: routed experts (R3) on a model of Qwen3-30B-A3B's shape (48 layers, top-8 of
 * 128 experts), against the scripted engine as that model in its own process.
 *
 * - **Wire**: the routes bytes of a later turn's answer, asked from the chain's recorded length
 *   (SGLang's `routed_experts_start_len`, what the gateway sends) and from 0 (no start length:
 *   what vLLM sends every turn), at each history size. Goal: O(the turn's new tokens).
 * - **Stored**: the routes' bytes in KV a recorded row (token), against layers × top-k × the
 *   stored type. Goal: under 5% over.
 * - **Gateway time**: a later turn's gateway time (the turn less the engine call's wall time) with
 *   `ROUTED_EXPERTS` and without, the same conversation on two gateways, turns taken in turn, the
 *   median of 80 a history size after 5 unmeasured. Goal: within 1.2×. Each gateway is a process
 *   of its own serving HTTP (`_routes_gateway.ts`), as gateways run, so that one's collections
 *   and left-over work do not land on the other's turns; a turn is timed in its gateway's process,
 *   from the handler's call to the reply's last byte. Beside it, the wire: the engine call's wall
 *   time less the engine's own account (the answer's bytes serialized, sent and read: SGLang's
 *   routes are base64 int32, ~2 KiB a new token here, decoded on the engine HTTP worker); and the
 *   event loop: the CPU the gateway's main thread spent on the turn, the engine call's included
 *   (Linux's schedstat of the thread); and the commit: the turn's wall time after its record was
 *   built, with the request's reading before its preparing began (the commit that writes the
 *   routes' blob, the counting, the reply's way back).
 * - **Memory**: the R3 gateway process's heap after a collection, every few turns while one
 *   episode grows to 128k tokens. Goal: flat — nothing grows with the routes of the history (the
 *   chain's prompt ids do, as without R3).
 *
 * `BENCH_FAST=1` (see `_harness.ts`): histories of about 2k and 8k tokens, 3 measured turns, an
 * episode of 16k tokens.
 *
 * @module
 */
import type { MessageParam } from "../lib/anthropic/mod.ts";
import { rowWidth } from "../lib/engine/mod.ts";
import { moeModelFolder } from "../test/_gateway.ts";
import { answer, filler, median, request, setting } from "./_harness.ts";
import { type RoutesGateway, startRoutesGateway } from "./_routes_gateway.ts";

const MOE = { layers: 48, topK: 8, experts: 128, denseLayers: [] };
const TARGETS = setting("BENCH_TARGETS", "2000,30000,120000", "2000,8000").split(",").map(Number);
const MEASURED_TURNS = Number(setting("BENCH_TURNS", 80, 3));
/** Turns of the measured size before the measured ones, at each history size. */
const WARM_TURNS = 5;
const EPISODE_TOKENS = Number(setting("BENCH_EPISODE_TOKENS", 128_000, 16_000));

const folder = await moeModelFolder(MOE);
const engineEnv = { SCRIPTED_MOE: JSON.stringify(MOE) };
const [withRoutes, without] = await Promise.all([
  startRoutesGateway({ ROUTED_EXPERTS: "true", TOKENIZER_PATH: folder }, engineEnv),
  startRoutesGateway({ TOKENIZER_PATH: folder }, engineEnv),
]);

console.log(
  `Rollout Gateway routed experts (R3) bench — Qwen3-30B-A3B's shape (48 layers × top-8 of 128), ${MEASURED_TURNS} measured turns`,
);

interface Conversation {
  readonly gw: RoutesGateway;
  readonly sessionId: string;
  readonly token: string;
  readonly messages: MessageParam[];
  // deno-lint-ignore no-explicit-any
  reply: any;
  readonly gatewayMs: number[];
  /**
   * The engine call's wall time less the engine's own account: the answer's bytes on the wire,
   * the engine's serializing and the gateway's reading of them.
   */
  readonly transportMs: number[];
  /** CPU the main thread spent on the turn (the request's event loop). */
  readonly loopMs: number[];
  /**
   * The turn's wall time after its record was built (the commit, its routes' blob with it, the
   * counting and the reply's way back), and before its preparing began (the request's reading).
   */
  readonly commitMs: number[];
}

async function open(gw: RoutesGateway): Promise<Conversation> {
  const session = await gw.session();
  const messages: MessageParam[] = [{ role: "user", content: "Run the tests and fix what fails." }];
  const body = JSON.stringify(request(messages));
  return {
    gw,
    sessionId: session.id,
    token: session.token,
    messages,
    reply: (await gw.turn(session.id, session.token, body)).reply,
    gatewayMs: [],
    transportMs: [],
    loopMs: [],
    commitMs: [],
  };
}

/** One turn answering the reply's call with `lines` lines of output; timed when `measured`. */
async function turn(c: Conversation, lines: number, measured: boolean): Promise<void> {
  answer(c.messages, c.reply, filler(lines, c.messages.length));
  const { reply, figures } = await c.gw.turn(
    c.sessionId,
    c.token,
    JSON.stringify(request(c.messages)),
  );
  c.reply = reply;
  if (!measured) return;
  c.gatewayMs.push(figures.gatewayMs);
  c.transportMs.push(figures.transportMs);
  c.loopMs.push(figures.loopMs);
  c.commitMs.push(figures.commitMs);
}

async function grow(c: Conversation, target: number): Promise<void> {
  while (c.reply.usage.input_tokens + 40 < target) {
    await turn(c, Math.min(600, Math.ceil((target - c.reply.usage.input_tokens) / 14)), false);
  }
}

/** The routes bytes an engine answer of the chain's last prompt holds, asked from `start`. */
async function wireBytes(c: Conversation, start: number): Promise<number> {
  const last = await c.gw.lastTurn(c.sessionId);
  const prompt = await c.gw.lastPrompt(c.sessionId);
  const response = await fetch(`${c.gw.engineUrl}/generate`, {
    method: "POST",
    body: JSON.stringify({
      input_ids: prompt,
      sampling_params: { max_new_tokens: last.outputLen },
      return_routed_experts: true,
      routed_experts_start_len: start,
    }),
  });
  const body = await response.json();
  return String(body.meta_info.routed_experts ?? "").length;
}

/** Most rows from 0 the bench asks the scripted engine for, rather than computing their size. */
const WIRE_MEASURED_ROWS = 50_000;

/** Characters of base64 for `bytes` bytes. */
const base64Length = (bytes: number) => 4 * Math.ceil(bytes / 3);

const pad = (v: string | number, n: number) => String(v).padStart(n);
const kib = (bytes: number) => `${(bytes / 1024).toFixed(1)} KiB`;

// Wire and gateway time, per history size: the same conversation on both gateways.
console.log(
  `\n${pad("history", 8)} ${pad("routes, from recorded", 22)} ${pad("from 0", 12)} ${
    pad("gateway ms R3", 14)
  } ${pad("without", 8)} ${pad("ratio", 6)} ${pad("wire ms R3", 11)} ${pad("without", 8)} ${
    pad("loop ms R3", 11)
  } ${pad("without", 8)} ${pad("commit ms R3", 13)} ${pad("without", 8)}`,
);
const ratios: number[] = [];
for (const target of TARGETS) {
  const [on, off] = [await open(withRoutes), await open(without)];
  await grow(on, target);
  await grow(off, target);
  // The first turns of the measured size after growing run slower on both gateways (the store
  // still taking the growth's writes): unmeasured.
  for (let i = 0; i < WARM_TURNS; i++) {
    await turn(on, 20, false);
    await turn(off, 20, false);
  }
  for (let i = 0; i < MEASURED_TURNS; i++) {
    await turn(on, 20, true);
    await turn(off, 20, true);
  }
  const last = await on.gw.lastTurn(on.sessionId);
  const fromRecorded = await wireBytes(on, last.routes!.start);
  // From 0 past ~50k tokens the answer is hundreds of MB of base64, more than the scripted
  // engine will build in one string: its size is computed there (SGLang's base64 of int32 rows).
  const rowsFromZero = last.inputLen + last.outputLen - 1;
  const computed = rowsFromZero > WIRE_MEASURED_ROWS;
  const fromZero = computed
    ? base64Length(rowsFromZero * rowWidth(MOE) * 4)
    : await wireBytes(on, 0);
  const ratio = median(on.gatewayMs) / median(off.gatewayMs);

  ratios.push(ratio);
  console.log(
    `${pad(`~${Math.round(last.inputLen / 1000)}k`, 8)} ${pad(kib(fromRecorded), 22)} ${
      pad(`${kib(fromZero)}${computed ? "*" : ""}`, 12)
    } ${pad(median(on.gatewayMs).toFixed(2), 14)} ${pad(median(off.gatewayMs).toFixed(2), 8)} ${
      pad(ratio.toFixed(2), 6)
    } ${pad(median(on.transportMs).toFixed(2), 11)} ${pad(median(off.transportMs).toFixed(2), 8)} ${
      pad(median(on.loopMs).toFixed(2), 11)
    } ${pad(median(off.loopMs).toFixed(2), 8)} ${pad(median(on.commitMs).toFixed(2), 13)} ${
      pad(median(off.commitMs).toFixed(2), 8)
    }`,
  );
}
console.log("* computed: 4 × ⌈rows × layers × top-k × 4 bytes / 3⌉ characters of base64");
console.log(
  `gateway time with R3 / without: ${ratios.map((r) => r.toFixed(2)).join(", ")}× (goal ≤ 1.2×)`,
);

// Stored bytes a row, and memory over one long episode.
const episode = await open(withRoutes);
const heap: { tokens: number; mib: number }[] = [];
const sample = async () => {
  heap.push({ tokens: episode.reply.usage.input_tokens, mib: (await withRoutes.heap()) / 2 ** 20 });
};
await sample();
while (episode.reply.usage.input_tokens < EPISODE_TOKENS) {
  await turn(episode, 150, false);
  if (
    heap.length === 0 ||
    episode.reply.usage.input_tokens - heap.at(-1)!.tokens >= EPISODE_TOKENS / 8
  ) {
    await sample();
  }
}
await sample();
const { bytes: storedBytes, rows } = await withRoutes.stored(episode.sessionId);
const ideal = rows * rowWidth(MOE) * 1;
console.log(
  `\nstored: ${rows} rows in ${kib(storedBytes)}: ${
    (storedBytes / rows).toFixed(1)
  } bytes a token ` +
    `(layers × top-k × 1 byte = ${rowWidth(MOE)}; overhead ${
      (100 * (storedBytes - ideal) / ideal).toFixed(2)
    }%, goal < 5%)`,
);
console.log(
  `the gateway's heap after a collection over one episode: ` +
    heap.map((h) => `${Math.round(h.tokens / 1000)}k tokens ${h.mib.toFixed(0)} MiB`).join(", "),
);

await withRoutes.close();
await without.close();
await Deno.remove(folder, { recursive: true });
