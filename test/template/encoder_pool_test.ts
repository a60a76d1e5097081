/**
 * The pool of tokenizer workers gives exactly the tokens the event loop would (whole arrays): the
 * recorded Claude Code, Codex and Qwen Code requests' prompts and deltas, edge-case texts and
 * seeded random strings. It stops a text as soon as its tokens pass the budget, a caller that
 * gives up is answered at once, and a worker that cannot let go of a cancelled text is replaced
 * while the jobs behind it go on.
 */
import assert from "node:assert/strict";
import { anthropicTurnInput, type MessageCreateParams } from "../../lib/anthropic/mod.ts";
import type { ChatMessage } from "../../lib/chat/mod.ts";
import { PromptIds } from "../../lib/engine/mod.ts";
import { openaiTurnInput } from "../../lib/openai/mod.ts";
import { responsesTurnInput } from "../../lib/responses/mod.ts";
import type { TurnInput } from "../../lib/session/mod.ts";
import { EncodeCancelledError, OverBudgetError, tokenizerSource } from "../../lib/tokenizer/mod.ts";
import {
  EncoderPool,
  inProcessEncoder,
  renderDelta,
  type Rendered,
  renderPrompt,
} from "../../lib/template/mod.ts";
import { qwen3 } from "../_gateway.ts";
import { EDGES, randomTexts } from "../tokenizer/_library_tokenizer.ts";
import { until } from "../engine/_client.ts";
import { blob } from "../../bench/_random.ts";

const tokenizer = await qwen3();

/**
 * What the pool answers for `rendered`: the same text and tokens, with the tokens' digits as the
 * engine's body writes them, whole.
 */
function fromWorker(rendered: Rendered): Rendered {
  return { ...rendered, ascii: PromptIds.from(rendered.tokens).ascii() };
}

/** A pool of `workers` for the test's tokenizer. */
function pool(workers = 2, cancelGraceMs = 1_000) {
  return new EncoderPool(tokenizerSource(tokenizer), {
    workers,
    bulkChars: 65_536,
    cancelGraceMs,
  });
}

/** Every recorded request of the three real CLIs, as the session sees it. */
async function recordedInputs(): Promise<{ name: string; input: TurnInput<unknown> }[]> {
  const read = async (file: string) =>
    JSON.parse(await Deno.readTextFile(new URL(`../../fixtures/${file}`, import.meta.url)))
      .requests as { body: Record<string, unknown> }[];
  const context = { sessionId: "sess_1", signingSecret: "secret-secret-secret" };
  const out: { name: string; input: TurnInput<unknown> }[] = [];
  for (const file of ["episode", "subagent", "parallel", "compaction", "side"]) {
    for (const [k, request] of (await read(`claude_code/${file}.json`)).entries()) {
      const body = { ...request.body, max_tokens: 64 } as unknown as MessageCreateParams;
      out.push({ name: `claude_code/${file} ${k}`, input: anthropicTurnInput(body, context) });
    }
  }
  for (const file of ["episode", "one_answer"]) {
    for (const [k, request] of (await read(`qwen_code/${file}.json`)).entries()) {
      const input = openaiTurnInput(request.body as never, { ...context, decodeToken: String });
      out.push({ name: `qwen_code/${file} ${k}`, input });
    }
  }
  for (const file of ["episode", "subagent"]) {
    for (const [k, request] of (await read(`codex/${file}.json`)).entries()) {
      out.push({
        name: `codex/${file} ${k}`,
        input: responsesTurnInput(request.body as never, context),
      });
    }
  }
  return out;
}

Deno.test("the pool's tokens equal the event loop's for every recorded CLI request, whole prompts and deltas", async () => {
  const encoder = pool();
  try {
    let deltas = 0;
    for (const { name, input } of await recordedInputs()) {
      const prompt = input.prompt();
      assert.deepEqual(
        await encoder.renderPrompt(prompt),
        fromWorker(renderPrompt(tokenizer, prompt)),
        `${name}: prompt`,
      );
      // The delta after every assistant message, as a later turn renders it.
      const count = input.messageIdentities.length;
      for (let from = 1; from < count; from++) {
        const messages = input.lower(from, []);
        if (messages.length === 0 || prompt.messages.length === 0) continue;
        let expected;
        try {
          expected = renderDelta(tokenizer, messages, input.enableThinking);
        } catch {
          continue; // not a place a delta starts (it would open with the assistant's message)
        }
        assert.deepEqual(
          await encoder.renderDelta(messages, input.enableThinking),
          fromWorker(expected),
          `${name}: delta from ${from}`,
        );
        deltas++;
      }
    }
    assert.ok(deltas > 20, `${deltas} deltas compared`);
  } finally {
    await encoder.close();
  }
});

Deno.test("the pool's tokens equal the event loop's for edge-case texts and seeded random strings", async () => {
  const encoder = pool();
  try {
    const texts = [...EDGES.filter((text) => text.length > 0), ...randomTexts(300)];
    const results = await Promise.all(texts.map((text) => {
      const messages: ChatMessage[] = [{ role: "tool", content: text }, {
        role: "user",
        content: `again: ${text}`,
      }];
      return Promise.all([
        encoder.renderDelta(messages, undefined),
        encoder.renderPrompt({ messages: [{ role: "user", content: text }], tools: [] }),
      ]);
    }));
    texts.forEach((text, i) => {
      assert.deepEqual(
        results[i][0],
        fromWorker(renderDelta(tokenizer, [{ role: "tool", content: text }, {
          role: "user",
          content: `again: ${text}`,
        }])),
        JSON.stringify(text),
      );
      assert.deepEqual(
        results[i][1],
        fromWorker(
          renderPrompt(tokenizer, { messages: [{ role: "user", content: text }], tools: [] }),
        ),
        JSON.stringify(text),
      );
    });
  } finally {
    await encoder.close();
  }
});

Deno.test("a text past its budget stops there, in the pool as on the event loop, with the same count", async () => {
  const encoder = pool();
  try {
    const messages: ChatMessage[] = [{ role: "tool", content: blob(400_000) }];
    for (const each of [encoder, inProcessEncoder(tokenizer)]) {
      const error = await each.renderDelta(messages, undefined, { maxTokens: 5_000 }).then(
        () => null,
        (error) => error,
      );
      assert.ok(error instanceof OverBudgetError, String(error));
      assert.equal(error.budget, 5_000);
      // Stopped within a batch of pieces of the budget, far short of the text's ~75k tokens.
      assert.ok(error.tokens > 5_000 && error.tokens < 5_000 + 2_048 + 16, String(error.tokens));
    }
  } finally {
    await encoder.close();
  }
});

Deno.test("one enormous piece that cannot fit is refused by a look ahead, before its slow encode; one that fits is encoded exactly", async () => {
  // One run of letters is one piece: a million of them would take ~20 s to encode whole.
  const letters = blob(1_000_000).replace(/[^a-z]/g, "q");
  const error = await inProcessEncoder(tokenizer).renderDelta(
    [{ role: "tool", content: letters }],
    undefined,
    { maxTokens: 100_000 },
  ).then(() => null, (error) => error);
  assert.ok(error instanceof OverBudgetError, String(error));
  // The look ahead is half the rate its windows show: ~0.5 tokens a letter here, so ~250k.
  assert.ok(error.tokens > 200_000, String(error.tokens));
  // Under its budget the piece is encoded whole, its tokens the event loop's own.
  const fits = blob(80_000).replace(/[^a-z]/g, "q");
  const messages: ChatMessage[] = [{ role: "tool", content: fits }];
  assert.deepEqual(
    await inProcessEncoder(tokenizer).renderDelta(messages, undefined, { maxTokens: 60_000 }),
    renderDelta(tokenizer, messages),
  );
});

Deno.test("a caller that gives up is answered at once; the worker lets go between batches and takes the next job", async () => {
  const encoder = pool(1);
  try {
    const abort = new AbortController();
    const big = encoder.renderDelta([{ role: "tool", content: blob(4_000_000) }], undefined, {
      signal: abort.signal,
    });
    const next = encoder.renderDelta([{ role: "tool", content: "small" }], undefined);
    abort.abort();
    await assert.rejects(big, EncodeCancelledError);
    assert.deepEqual(
      await next,
      fromWorker(renderDelta(tokenizer, [{ role: "tool", content: "small" }])),
    );
    assert.equal(encoder.stats().replaced, 0, "the worker let go by itself");
  } finally {
    await encoder.close();
  }
});

Deno.test("a worker stuck in one enormous piece after its caller gave up is replaced; the job queued behind it is done by the new one", async () => {
  // One run of letters is one piece, encoded whole: seconds of work no guard can cut. As a system
  // prompt it comes right after the first token the guard counts, `<|im_start|>`.
  const encoder = pool(1, 100);
  try {
    await encoder.warm();
    const abort = new AbortController();
    const letters = blob(3_000_000).replace(/[^a-z]/g, "q");
    const stuck = encoder.renderPrompt({
      messages: [{ role: "system", content: letters }],
      tools: [],
    }, {
      signal: abort.signal,
    });
    const next = encoder.renderDelta([{ role: "user", content: "still here" }], undefined);
    // Once the worker has counted the token before the letters, it is in them: the caller leaves.
    await until(() => (encoder.progress()[0] ?? 0) >= 1);
    const [running] = encoder.running();
    assert.equal(typeof running, "number", "the worker says in shared memory which job it is on");
    abort.abort();
    await assert.rejects(stuck, EncodeCancelledError);
    assert.deepEqual(
      await next,
      fromWorker(renderDelta(tokenizer, [{ role: "user", content: "still here" }])),
    );
    assert.equal(encoder.stats().replaced, 1);
    assert.deepEqual(encoder.running(), [null], "the new worker is on no job once it is done");
  } finally {
    await encoder.close();
  }
});

Deno.test("with two workers, a huge text goes to the bulk lane and small ones are not queued behind it", async () => {
  const encoder = pool(2);
  try {
    await encoder.warm();
    const big = encoder.renderDelta([{ role: "tool", content: blob(1_500_000) }], undefined);
    const small = encoder.renderDelta([{ role: "tool", content: "ok" }], undefined);
    assert.deepEqual(encoder.pending(), [1, 1], "one job on each worker");
    await small;
    await big;
  } finally {
    await encoder.close();
  }
});

Deno.test("a closed pool refuses work", async () => {
  const encoder = pool(1);
  await encoder.close();
  await assert.rejects(encoder.renderDelta([{ role: "tool", content: "x" }], undefined), /closed/);
});
