/**
 * The viewer on a long chain: a session grown to about 190k tokens (CONTEXT_LENGTH is 200k here),
 * then the token view's first, middle and last pages of 2,048 and 8,192 tokens, and the session
 * page, each timed over the whole request (`app.fetch`: reading KV, decoding tokens, rendering
 * HTML). A page should cost its own tokens, not the chain's: the middle and last pages take about
 * what the first does.
 *
 * `BENCH_UI_TOKENS` (190,000); `BENCH_FAST=1` (see `_harness.ts`): a chain of about 20k tokens,
 * each page timed twice.
 *
 * @module
 */
import type { MessageParam } from "../lib/anthropic/mod.ts";
import {
  ADMIN,
  answer,
  filler,
  isFast,
  median,
  request,
  setting,
  startBenchGateway,
} from "./_harness.ts";
import { createGatewayApp } from "../functions/serve.ts";

const TARGET = Number(setting("BENCH_UI_TOKENS", 190_000, 20_000));
const RUNS = isFast() ? 2 : 7;

const gateway = await startBenchGateway({ CONTEXT_LENGTH: "200000" });
const { call, deps } = gateway;
const app = createGatewayApp(deps);

const session = await call("/sessions", ADMIN, {});
const messages: MessageParam[] = [{ role: "user", content: "Run the tests and fix what fails." }];
let reply = await call("/v1/messages", session.token, request(messages));
let turns = 1;
while (reply.usage.input_tokens < TARGET) {
  answer(messages, reply, filler(600, messages.length));
  reply = await call("/v1/messages", session.token, request(messages));
  turns++;
}
const total = reply.usage.input_tokens + reply.usage.output_tokens;

async function timed(path: string): Promise<{ ms: number; bytes: number }> {
  const times: number[] = [];
  let bytes = 0;
  for (let i = 0; i < RUNS; i++) {
    const started = performance.now();
    const response = await app.fetch(
      new Request(`http://gateway${path}`, { headers: { authorization: `Bearer ${ADMIN}` } }),
    );
    const text = await response.text();
    if (response.status !== 200) throw new Error(`${path}: ${response.status}`);
    times.push(performance.now() - started);
    bytes = text.length;
  }
  return { ms: median(times), bytes };
}

console.log(`Rollout Gateway viewer bench — one chain of ~${total} tokens in ${turns} turns\n`);
console.log(`${"page".padEnd(34)} ${"ms".padStart(8)} ${"KiB".padStart(8)}`);
const base = `/ui/sessions/${session.id}`;
const rows: [string, string][] = [["session page", base]];
for (const size of [2048, 8192]) {
  for (
    const [name, from] of [["first", 0], ["middle", Math.floor(total / 2)], [
      "last",
      Math.max(0, total - size),
    ]]
  ) {
    rows.push([`tokens, ${name} ${size}`, `${base}/chains/c0?size=${size}&from=${from}`]);
  }
}
const results = new Map<string, number>();
for (const [name, path] of rows) {
  const { ms, bytes } = await timed(path);
  results.set(name, ms);
  console.log(
    `${name.padEnd(34)} ${ms.toFixed(1).padStart(8)} ${(bytes / 1024).toFixed(0).padStart(8)}`,
  );
}
const ratio = results.get("tokens, last 2048")! / results.get("tokens, first 2048")!;
console.log(`\nlast / first page (2,048): ${ratio.toFixed(2)}× (a page costs its own tokens)`);
await gateway.close();
