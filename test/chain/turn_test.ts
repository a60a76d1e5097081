import assert from "node:assert/strict";
import {
  closingTokens,
  deltaAfter,
  survivesRoundTrip,
  turnEnd,
  withoutStopToken,
} from "../../lib/chain/turn.ts";
import { qwen3 } from "../_gateway.ts";

const EOS = 151_645;

Deno.test("turnEnd() maps a length finish to length", () => {
  assert.deepEqual(turnEnd({ type: "length" }), { reason: "length", stopSequence: null });
});

Deno.test("turnEnd() maps a stop on a token id to end_of_turn", () => {
  assert.deepEqual(turnEnd({ type: "stop", matched: EOS }), {
    reason: "end_of_turn",
    stopSequence: null,
  });
  assert.deepEqual(turnEnd({ type: "stop", matched: 151_643 }), {
    reason: "end_of_turn",
    stopSequence: null,
  });
  assert.deepEqual(turnEnd({ type: "stop", matched: null }), {
    reason: "end_of_turn",
    stopSequence: null,
  });
});

Deno.test("turnEnd() maps a stop string to stop_sequence with the string", () => {
  assert.deepEqual(turnEnd({ type: "stop", matched: "</answer>" }), {
    reason: "stop_sequence",
    stopSequence: "</answer>",
  });
});

const QWEN3 = { stopIds: [EOS], closeId: EOS };
/** gpt-oss: `<|return|>` and `<|call|>` end a turn, `<|end|>` closes a cut one. */
const HARMONY = { stopIds: [200002, 200012], closeId: 200007 };

Deno.test("closingTokens() adds nothing when the output ends with the end-of-turn token", () => {
  assert.deepEqual(closingTokens([9707, 13, EOS], QWEN3), []);
  assert.deepEqual(closingTokens([EOS], QWEN3), []);
});

Deno.test("closingTokens() adds the end-of-turn token to an output that lacks it", () => {
  assert.deepEqual(closingTokens([9707, 13], QWEN3), [EOS]);
  assert.deepEqual(closingTokens([EOS, 9707], QWEN3), [EOS]);
  assert.deepEqual(closingTokens([], QWEN3), [EOS]);
  assert.deepEqual(closingTokens([9707, 2], { stopIds: [2], closeId: 2 }), []);
});

Deno.test("closingTokens() closes a harmony output with <|end|> unless a stop token ended it", () => {
  assert.deepEqual(closingTokens([3686, 200012], HARMONY), []);
  assert.deepEqual(closingTokens([3686, 200002], HARMONY), []);
  assert.deepEqual(closingTokens([3686, 200007], HARMONY), []);
  assert.deepEqual(closingTokens([3686], HARMONY), [200007]);
  assert.deepEqual(closingTokens([200012, 3686], HARMONY), [200007]);
});

Deno.test("closingTokens() adds nothing in a family whose next message's marker closes a turn", () => {
  const glm = { stopIds: [151329, 151336, 151338], closeId: null };
  assert.deepEqual(closingTokens([3686], glm), []);
  assert.deepEqual(closingTokens([3686, 151338], glm), []);
  assert.deepEqual(closingTokens([], glm), []);
});

Deno.test("deltaAfter() drops the delta's first token only when the chain ends with it as a stop token", () => {
  const stops = [151329, 151336, 151338];
  // GLM: the model sampled <|observation|>; the delta opens with it.
  assert.deepEqual(deltaAfter(151338, [151338, 27, 28], stops), [27, 28]);
  // Sampled <|user|>, but tool results come next: both markers stay.
  assert.deepEqual(deltaAfter(151336, [151338, 27, 28], stops), [151338, 27, 28]);
  // The same token that is not a stop token is text the model and the template both wrote.
  assert.deepEqual(deltaAfter(27, [27, 28], stops), [27, 28]);
  assert.deepEqual(deltaAfter(undefined, [151338], stops), [151338]);
  assert.deepEqual(deltaAfter(151338, [], stops), []);
  // Qwen3: <|im_end|> is never the delta's first token.
  assert.deepEqual(deltaAfter(EOS, [198, 151644], [EOS]), [198, 151644]);
});

Deno.test("survivesRoundTrip() accepts the tokenizer's own encoding", async () => {
  const tokenizer = await qwen3();
  const texts = [
    "Hello world",
    "<think>\nLet me look at the failing test.\n</think>\n\nThe fix is in `parse()`.",
    '<tool_call>\n{"name": "bash", "arguments": {"command": "ls -la"}}\n</tool_call>',
    "naïve café — 日本語 🫠",
  ];
  for (const text of texts) {
    assert.equal(survivesRoundTrip([...tokenizer.encode(text), EOS], tokenizer), true, text);
  }
  assert.equal(survivesRoundTrip([], tokenizer), true);
});

Deno.test("survivesRoundTrip() rejects a non-canonical split of the same text", async () => {
  const tokenizer = await qwen3();
  const split = [...tokenizer.encode("hel"), ...tokenizer.encode("lo")];
  assert.deepEqual(split, [49_122, 385]);
  assert.equal(tokenizer.decode(split), "hello");
  assert.equal(survivesRoundTrip(split, tokenizer), false);
  const worded = [...tokenizer.encode("Hello w"), ...tokenizer.encode("orld"), EOS];
  assert.equal(survivesRoundTrip(worded, tokenizer), false);
});

Deno.test("survivesRoundTrip() rejects an output cut inside a character", async () => {
  const tokenizer = await qwen3();
  const emoji = tokenizer.encode("🫠");
  assert.ok(emoji.length > 1, `🫠 is ${emoji.length} token(s)`);
  assert.equal(survivesRoundTrip(emoji.slice(0, -1), tokenizer), false);
});

Deno.test("survivesRoundTrip() compares lengths as well as tokens", () => {
  const codec = { decode: () => "x", encode: () => [1, 2, 3] };
  assert.equal(survivesRoundTrip([1, 2], codec), false);
  assert.equal(survivesRoundTrip([1, 2, 3, 4], codec), false);
  assert.equal(survivesRoundTrip([1, 2, 3], codec), true);
});

Deno.test("withoutStopToken() drops only a stop token that ended the output", () => {
  assert.deepEqual(withoutStopToken([3686, 200012], HARMONY.stopIds), [3686]);
  assert.deepEqual(withoutStopToken([3686, 200002], HARMONY.stopIds), [3686]);
  assert.deepEqual(withoutStopToken([3686, 200007], HARMONY.stopIds), [3686, 200007]);
  assert.deepEqual(withoutStopToken([200012, 3686], HARMONY.stopIds), [200012, 3686]);
  assert.deepEqual(withoutStopToken([], HARMONY.stopIds), []);
});
