/**
 * The adaptive encoder keeps a small text on the caller's event loop only while no other turn
 * needs it; a text past its inline size, or any text under load, goes to the workers. Either way
 * the tokens are the same, and a budget stops the inline encode as it stops the pool's.
 */
import assert from "node:assert/strict";
import type { ChatMessage } from "../../lib/chat/mod.ts";
import { OverBudgetError, tokenizerSource } from "../../lib/tokenizer/mod.ts";
import {
  adaptiveEncoder,
  EncoderPool,
  inProcessEncoder,
  renderDelta,
  renderPrompt,
} from "../../lib/template/mod.ts";
import { qwen3 } from "../_gateway.ts";

const tokenizer = await qwen3();

Deno.test("a small text stays on the event loop while uncontended; a big one, or any under load, goes to the workers", async () => {
  const pool = new EncoderPool(tokenizerSource(tokenizer), {
    workers: 1,
    bulkChars: 65_536,
    cancelGraceMs: 1_000,
  });
  let contended = false;
  const encoder = adaptiveEncoder(inProcessEncoder(tokenizer), pool, {
    inlineChars: 4_096,
    contended: () => contended,
  });
  try {
    const small: ChatMessage[] = [{
      role: "tool",
      content: "src/a.ts:1: const a = 1;\n".repeat(40),
    }];
    const big: ChatMessage[] = [{
      role: "tool",
      content: "src/a.ts:1: const a = 1;\n".repeat(400),
    }];
    const prompt = { messages: [{ role: "user" as const, content: "hi" }], tools: [] };
    assert.deepEqual(
      (await encoder.renderDelta(small, undefined)).tokens,
      renderDelta(tokenizer, small).tokens,
    );
    assert.deepEqual(
      (await encoder.renderPrompt(prompt)).tokens,
      renderPrompt(tokenizer, prompt).tokens,
    );
    // Nothing reached the pool, which starts its worker on its first job.
    assert.deepEqual(pool.stats(), { started: 0, replaced: 0 });

    assert.deepEqual(
      (await encoder.renderDelta(big, undefined)).tokens,
      renderDelta(tokenizer, big).tokens,
    );
    assert.equal(pool.stats().started, 1);

    contended = true;
    const pending = encoder.renderDelta(small, undefined);
    assert.deepEqual(pool.pending(), [1]);
    assert.deepEqual((await pending).tokens, renderDelta(tokenizer, small).tokens);
  } finally {
    await encoder.close();
  }
  await assert.rejects(
    encoder.renderDelta([{ role: "tool", content: "x".repeat(5_000) }], undefined),
    /closed/,
  );
});

Deno.test("a budget stops an inline encode as it stops the pool's", async () => {
  const encoder = adaptiveEncoder(
    inProcessEncoder(tokenizer),
    inProcessEncoder(tokenizer),
    { inlineChars: 4_096, contended: () => false },
  );
  const small: ChatMessage[] = [{ role: "tool", content: "word ".repeat(500) }];
  const exact = renderDelta(tokenizer, small).tokens.length;
  assert.equal(
    (await encoder.renderDelta(small, undefined, { maxTokens: exact })).tokens.length,
    exact,
  );
  await assert.rejects(
    encoder.renderDelta(small, undefined, { maxTokens: exact - 1 }),
    OverBudgetError,
  );
});
