/**
 * Streaming bench: how soon an agent reads what the engine samples, and how soon the engine
 * stops when the agent leaves. The scripted engine runs in this process (one clock for both
 * sides) at `BENCH_TOKEN_MS` per token; the gateway serves over a real socket.
 *
 * - first byte: the client's first body byte after the engine produced the turn's first token;
 * - first text: the client's first `content_block_delta` after that token;
 * - unstreamed: when the same turn's JSON reply arrives, for comparison (after the last token);
 * - abort: from the client cancelling its stream to the engine's call ending.
 *
 * `BENCH_TURNS` (30), `BENCH_TOKEN_MS` (5); `BENCH_FAST=1` (see `_harness.ts`): 3 turns after 1
 * warm-up turn.
 *
 * @module
 */
import { defaultTokenizerPath, resolveConfig } from "../lib/config/mod.ts";
import { loadTokenizer } from "../lib/tokenizer/mod.ts";
import { buildDeps } from "../functions/_deps.ts";
import { createGatewayApp } from "../functions/serve.ts";
import { startScriptedEngine } from "../lib/scripted_engine/mod.ts";
import { ADMIN, isFast, median, percentile, setting } from "./_harness.ts";

const TURNS = Number(setting("BENCH_TURNS", 30, 3));
const TOKEN_MS = Number(Deno.env.get("BENCH_TOKEN_MS") ?? 5);
/** Turns first run unmeasured (JIT, caches, connections). */
const WARMUP_TURNS = isFast() ? 1 : 3;
const REPLY = "Here is the answer, word by word: " + "word ".repeat(60);

const dir = await Deno.makeTempDir({ prefix: "bench-stream-" });
const tokenizer = await loadTokenizer(defaultTokenizerPath());
const engine = await startScriptedEngine({ tokenizer, script: () => REPLY, latencyMs: TOKEN_MS });
const config = resolveConfig({
  KV_PATH: `${dir}/bench.kv`,
  ADMIN_TOKEN: ADMIN,
  SGLANG_URL: engine.url,
  PING_INTERVAL_MS: "10000",
});
const deps = await buildDeps(config, { tokenizer });
const app = createGatewayApp(deps);
const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, app.fetch);
const url = `http://127.0.0.1:${server.addr.port}`;

async function openSession(): Promise<string> {
  const response = await fetch(`${url}/sessions`, {
    method: "POST",
    headers: { authorization: `Bearer ${ADMIN}` },
    body: "{}",
  });
  return (await response.json()).token;
}

function post(token: string, stream: boolean): Promise<Response> {
  return fetch(`${url}/v1/messages`, {
    method: "POST",
    headers: { "x-api-key": token, "content-type": "application/json" },
    body: JSON.stringify({
      model: "m",
      max_tokens: 256,
      stream,
      messages: [{ role: "user", content: "Answer." }],
    }),
  });
}

const firstByte: number[] = [];
const firstText: number[] = [];
const unstreamed: number[] = [];
const aborts: number[] = [];
for (let turn = 0; turn < TURNS + WARMUP_TURNS; turn++) {
  const measured = turn >= WARMUP_TURNS;
  // Streamed: time the first byte and the first text against the engine's first token.
  let calls = engine.calls.length;
  let reader = (await post(await openSession(), true)).body!.getReader();
  const decoder = new TextDecoder();
  let text = "";
  let byteAt = 0;
  let textAt = 0;
  for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
    byteAt ||= performance.now();
    text += decoder.decode(chunk.value, { stream: true });
    if (!textAt && text.includes("content_block_delta")) textAt = performance.now();
  }
  const streamedCall = engine.calls[calls];
  if (measured) {
    firstByte.push(byteAt - streamedCall.firstTokenAt!);
    firstText.push(textAt - streamedCall.firstTokenAt!);
  }
  // Unstreamed: the reply arrives after the last token.
  calls = engine.calls.length;
  const response = await post(await openSession(), false);
  await response.json();
  if (measured) unstreamed.push(performance.now() - engine.calls[calls].firstTokenAt!);
  // Abort: cancel after the first text, until the engine's call ends.
  calls = engine.calls.length;
  reader = (await post(await openSession(), true)).body!.getReader();
  text = "";
  while (!text.includes("content_block_delta")) {
    text += decoder.decode((await reader.read()).value, { stream: true });
  }
  const cancelled = Date.now();
  await reader.cancel();
  const aborted = engine.calls[calls];
  while (aborted.finishedAt === undefined) await new Promise((resolve) => setTimeout(resolve, 1));
  if (measured) aborts.push(aborted.finishedAt - cancelled);
}

const row = (name: string, values: number[]) =>
  console.log(
    `${name.padEnd(40)} ${median(values).toFixed(2).padStart(8)} ${
      percentile(values, 0.99).toFixed(2).padStart(8)
    }`,
  );
console.log(`Rollout Gateway stream bench — ${TURNS} turns, engine ${TOKEN_MS} ms/token`);
console.log(
  `${"after the engine's first token, ms".padEnd(40)} ${"p50".padStart(8)} ${"p99".padStart(8)}`,
);
row("first byte at the client (streamed)", firstByte);
row("first text delta at the client (streamed)", firstText);
row("whole reply at the client (unstreamed)", unstreamed);
row("client leaves → engine call ends", aborts);
console.log(
  `\nfirst byte within ${percentile(firstByte, 0.99).toFixed(2)} ms of the engine's first token ` +
    `at p99 (goal ≤ 5 ms); the engine stops ${percentile(aborts, 0.99).toFixed(0)} ms after the ` +
    `client leaves at p99 (goal ≤ 100 ms)`,
);

await server.shutdown();
await deps.close();
await engine.close();
await Deno.remove(dir, { recursive: true });
