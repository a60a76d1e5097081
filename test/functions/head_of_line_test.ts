/**
 * One agent's huge tool output does not stall the other sessions (behaviour, not timing): while
 * sessions run small turns, others send megabytes of spaceless tool output (a base64 blob) as a
 * first prompt and as a delta. Every small turn completes, exact; each huge one is refused as soon
 * as its count passes the window, in Anthropic's and OpenAI's words; nothing answers 5xx and the
 * tokenizer workers stay up. A client that leaves while its text is encoded frees its worker.
 */
import assert from "node:assert/strict";
import { assertChainExact, callsOfSample } from "../_chain_exact.ts";
import { startGateway, type TestGateway } from "../_gateway.ts";
import { until } from "../engine/_client.ts";
import { blob } from "../../bench/_random.ts";

const call =
  `<tool_call>\n{"name": "Bash", "arguments": {"command": "cat bundle.js"}}\n</tool_call>`;
const TOOLS = [{
  name: "Bash",
  input_schema: { type: "object", properties: { command: { type: "string" } } },
}];

/** POSTs a Messages body with `token`. */
function post(gw: TestGateway, token: string, body: unknown, signal?: AbortSignal) {
  return gw.fetch("/v1/messages", {
    method: "POST",
    headers: { "x-api-key": token, "content-type": "application/json" },
    body: JSON.stringify(body),
    signal,
  });
}

/**
 * A tool loop of `turns` small turns, its first question its own, each tool result `resultChars`
 * long at least; returns the session id.
 */
async function smallSession(
  gw: TestGateway,
  turns: number,
  label = "0",
  resultChars = 0,
): Promise<string> {
  const { id, token } = await gw.openSession();
  const messages: unknown[] = [{ role: "user", content: `What is in bundle ${label}?` }];
  for (let turn = 0; turn < turns; turn++) {
    const response = await post(gw, token, { model: "m", max_tokens: 64, tools: TOOLS, messages });
    const text = await response.text();
    assert.equal(response.status, 200, text);
    const reply = JSON.parse(text);
    const use = reply.content.find((block: { type: string }) => block.type === "tool_use");
    messages.push({ role: "assistant", content: reply.content });
    messages.push({
      role: "user",
      content: [{
        type: "tool_result",
        tool_use_id: use.id,
        content: `line ${turn}\n`.padEnd(resultChars, "."),
      }],
    });
  }
  return id;
}

Deno.test("small sessions' turns complete while huge spaceless tool results are refused early, over both protocols", async () => {
  const gw = await startGateway({ script: () => call, env: { CONTEXT_LENGTH: "32768" } });
  try {
    const huge = blob(1_500_000);
    // A huge delta: a first small turn, then its tool result is the blob.
    const delta = (async () => {
      const { token } = await gw.openSession();
      const messages: unknown[] = [{ role: "user", content: "Show me the bundle." }];
      const first = await post(gw, token, { model: "m", max_tokens: 64, tools: TOOLS, messages });
      const reply = await first.json();
      messages.push({ role: "assistant", content: reply.content });
      messages.push({
        role: "user",
        content: [{ type: "tool_result", tool_use_id: reply.content[0].id, content: huge }],
      });
      const big = await post(gw, token, { model: "m", max_tokens: 64, tools: TOOLS, messages });
      return { status: big.status, body: await big.json() };
    })();
    // A huge first prompt, over Chat Completions.
    const prompt = (async () => {
      const { token } = await gw.openSession();
      const big = await gw.fetch("/v1/chat/completions", {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "m", messages: [{ role: "user", content: huge }] }),
      });
      return { status: big.status, body: await big.json() };
    })();
    const small = Promise.all([1, 2, 3, 4].map((n) => smallSession(gw, 4, String(n))));
    const [refusedDelta, refusedPrompt, sessions] = await Promise.all([delta, prompt, small]);

    assert.equal(refusedDelta.status, 400);
    assert.match(
      refusedDelta.body.error.message,
      /^prompt is too long: more than \d+ tokens > 32767 maximum$/,
    );
    assert.equal(refusedPrompt.status, 400);
    assert.equal(refusedPrompt.body.error.code, "context_length_exceeded");
    assert.match(
      refusedPrompt.body.error.message,
      /maximum context length is 32768 tokens\. However, your messages resulted in more than \d+ tokens/,
    );
    // Every small turn was answered and recorded exactly.
    for (const id of sessions) {
      const samples = await gw.samples(id);
      assertChainExact(callsOfSample(gw.engine.calls, samples[0]), samples, id);
      assert.equal(samples[0].turns.length, 4);
    }
    assert.ok(gw.exchanges.every((exchange) => exchange.status < 500));
    // The workers are still up: a session goes on after its refusal.
    await smallSession(gw, 1);
  } finally {
    await gw.close();
  }
});

Deno.test("a client that leaves while its huge text is encoded frees its tokenizer worker for the next turns", async () => {
  // One worker, so the next turn would wait behind the huge one if it were not freed; a window
  // the huge text fits, so nothing refuses it before its encode.
  const gw = await startGateway({
    script: () => call,
    env: { TOKENIZER_WORKERS: "1", CONTEXT_LENGTH: "16777216" },
  });
  try {
    const pool = gw.deps.encoderPool!;
    await pool.warm();
    const before = pool.stats().replaced;
    const { token } = await gw.openSession();
    // One run of letters is one piece the worker encodes whole, seconds of work.
    const letters = blob(3_000_000).replace(/[^a-z]/g, "q");
    const abort = new AbortController();
    const leaving = post(gw, token, {
      model: "m",
      max_tokens: 64,
      system: letters,
      messages: [{ role: "user", content: "hi" }],
    }, abort.signal).catch((error) => error);
    await until(() => (pool.progress()[0] ?? 0) >= 1);
    abort.abort();
    await leaving;
    // The next session's turns are answered; the stuck worker was replaced, not waited for.
    // Its tool result is past what a lone turn encodes on the event loop: it needs the worker.
    await smallSession(gw, 2, "0", 5_000);
    assert.equal(pool.stats().replaced, before + 1);
    assert.deepEqual(pool.pending(), [0]);
  } finally {
    await gw.close();
  }
});
