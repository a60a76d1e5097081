/**
 * The guard over a long encode: it counts what the encode gives (not a delta's anchor), stops
 * it the moment the tokens pass the budget and not a token before, and stops it when the caller
 * gives up; a guard that never fires changes no token.
 */
import assert from "node:assert/strict";
import type { ChatMessage, ChatPrompt } from "../../lib/chat/mod.ts";
import { EncodeCancelledError, EncodeGuard, OverBudgetError } from "../../lib/tokenizer/mod.ts";
import { renderDelta, renderPrompt } from "../../lib/template/mod.ts";
import { qwen3 } from "../_gateway.ts";

const tokenizer = await qwen3();

Deno.test("EncodeGuard counts up to its budget, throws past it, and leaves allowed tokens out", () => {
  const guard = new EncodeGuard(10, () => false);
  guard.allow(4);
  guard.add(4);
  guard.add(10);
  assert.equal(guard.tokens, 10);
  guard.foresee(0);
  assert.throws(() => guard.foresee(1), (e) => e instanceof OverBudgetError && e.tokens === 11);
  assert.throws(() => guard.add(1), (e) => e instanceof OverBudgetError && e.budget === 10);
});

Deno.test("EncodeGuard stops an encode once its caller no longer wants it", () => {
  let wanted = true;
  const guard = new EncodeGuard(Infinity, () => !wanted);
  guard.add(5);
  wanted = false;
  assert.throws(() => guard.add(1), EncodeCancelledError);
});

Deno.test("a guarded delta has the same tokens, and a budget of exactly its length lets it through", () => {
  const messages: ChatMessage[] = [
    { role: "tool", content: "line one\n".repeat(3_000) + "naïve café — 日本語 🎉" },
    { role: "user", content: "next" },
  ];
  const plain = renderDelta(tokenizer, messages, undefined);
  // The anchor the delta is cut from is encoded too; the budget is for the delta alone.
  const exact = renderDelta(
    tokenizer,
    messages,
    undefined,
    new EncodeGuard(plain.tokens.length, () => false),
  );
  assert.deepEqual(exact.tokens, plain.tokens);
  assert.throws(
    () =>
      renderDelta(
        tokenizer,
        messages,
        undefined,
        new EncodeGuard(plain.tokens.length - 1, () => false),
      ),
    OverBudgetError,
  );
});

Deno.test("a guarded first prompt has the same tokens, and one token less budget refuses it", () => {
  const prompt: ChatPrompt = {
    tools: [],
    messages: [
      { role: "system", content: "You are terse." },
      { role: "user", content: "word ".repeat(5_000) },
    ],
  };
  const plain = renderPrompt(tokenizer, prompt);
  const exact = renderPrompt(tokenizer, prompt, new EncodeGuard(plain.tokens.length, () => false));
  assert.deepEqual(exact.tokens, plain.tokens);
  assert.throws(
    () => renderPrompt(tokenizer, prompt, new EncodeGuard(plain.tokens.length - 1, () => false)),
    OverBudgetError,
  );
});
