import assert from "node:assert/strict";
import type { TurnRecord } from "../../lib/chain/mod.ts";
import type { VersionSpan } from "../../lib/engine/mod.ts";
import { flattenChain } from "../../lib/chain/token_chain.ts";
import type { DecodedTurnTokens } from "../../lib/kv/mod.ts";

const EOS = 151_645;

function turn(
  index: number,
  parts: { delta: number[]; output: number[]; logprobs: number[]; closing: number[] },
  masked = false,
  versionSpans: readonly VersionSpan[] = [
    { version: "default", start: 0, end: parts.output.length },
  ],
): { record: TurnRecord; tokens: DecodedTurnTokens } {
  const record: TurnRecord = {
    index,
    rid: "0".repeat(32),
    parent: null,
    inputLen: 0,
    deltaLen: parts.delta.length,
    outputLen: parts.output.length,
    closingLen: parts.closing.length,
    finishReason: "end_of_turn",
    stopSequence: null,
    toolCalls: 0,
    flags: masked ? ["masked"] : [],
    masked,
    weightVersions: [...new Set(versionSpans.map((span) => span.version))],
    versionSpans,
    aborts: 0,
    startsInReasoning: false,
    reasoning: false,
    toolNames: [],
    model: "qwen3",
    messageCount: 2 * (index + 1),
    digest: "d",
    requestDigest: "r",
    bodyDigest: "b",
    chunks: 1,
    createdAt: 0,
    timings: { renderMs: 0, engineMs: 0, engineReportedMs: 0, totalMs: 0 },
  };
  const tokens: DecodedTurnTokens = {
    delta: new Uint32Array(parts.delta),
    output: new Uint32Array(parts.output),
    logprobs: new Float64Array(parts.logprobs),
    closing: new Uint32Array(parts.closing),
  };
  return { record, tokens };
}

Deno.test("flattenChain() puts the first delta in the prompt and the output in the response", () => {
  const arrays = flattenChain([
    turn(0, { delta: [1, 2, 3], output: [10, 11, EOS], logprobs: [-0.1, -0.2, -0.3], closing: [] }),
  ]);
  assert.deepEqual(arrays, {
    prompt_ids: [1, 2, 3],
    response_ids: [10, 11, EOS],
    loss_mask: [1, 1, 1],
    logprobs: [-0.1, -0.2, -0.3],
    version_spans: [{ version: "default", start: 0, end: 3 }],
  });
});

Deno.test("flattenChain() lays out outputs, closing tokens and later deltas in order", () => {
  const arrays = flattenChain([
    turn(0, { delta: [1, 2], output: [10, 11], logprobs: [-0.5, -1e-9], closing: [EOS] }),
    turn(1, {
      delta: [20, 21, 22],
      output: [30, EOS],
      logprobs: [-0.123456789012345, -2],
      closing: [],
    }),
    turn(2, { delta: [40], output: [50], logprobs: [-3], closing: [EOS] }),
  ]);
  assert.deepEqual(arrays, {
    prompt_ids: [1, 2],
    response_ids: [10, 11, EOS, 20, 21, 22, 30, EOS, 40, 50, EOS],
    loss_mask: [1, 1, 0, 0, 0, 0, 1, 1, 0, 1, 0],
    logprobs: [-0.5, -1e-9, 0, 0, 0, 0, -0.123456789012345, -2, 0, -3, 0],
    version_spans: [
      { version: "default", start: 0, end: 2 },
      { version: "default", start: 6, end: 8 },
      { version: "default", start: 9, end: 10 },
    ],
  });
});

Deno.test("flattenChain() places each turn's weight-version spans over its output's positions", () => {
  const arrays = flattenChain([
    turn(0, { delta: [1], output: [10, 11, 12], logprobs: [-1, -1, -1], closing: [EOS] }, false, [
      { version: "3", start: 0, end: 1 },
      { version: "4", start: 1, end: 3 },
    ]),
    turn(1, { delta: [20, 21], output: [30, EOS], logprobs: [-1, -1], closing: [] }, false, [
      { version: "4", start: 0, end: 2 },
    ]),
    legacy(turn(2, { delta: [40], output: [50, EOS], logprobs: [-1, -1], closing: [] }), ["5"]),
  ]);
  assert.deepEqual(arrays.response_ids, [10, 11, 12, EOS, 20, 21, 30, EOS, 40, 50, EOS]);
  assert.deepEqual(arrays.version_spans, [
    { version: "3", start: 0, end: 1 },
    { version: "4", start: 1, end: 3 },
    { version: "4", start: 6, end: 8 },
    { version: "5", start: 9, end: 11 },
  ]);
});

/** A turn as recorded before versions were kept per token: one span of its last version. */
function legacy(
  { record, tokens }: ReturnType<typeof turn>,
  weightVersions: string[],
): ReturnType<typeof turn> {
  const { versionSpans: _, ...rest } = record;
  return { record: { ...rest, weightVersions }, tokens };
}

Deno.test("flattenChain() gives a masked turn's sampled tokens mask 0 and keeps their logprobs", () => {
  const arrays = flattenChain([
    turn(0, { delta: [1], output: [10, 11], logprobs: [-0.5, -0.25], closing: [EOS] }, true),
    turn(1, { delta: [20], output: [30, EOS], logprobs: [-1, -2], closing: [] }),
  ]);
  assert.deepEqual(arrays.response_ids, [10, 11, EOS, 20, 30, EOS]);
  assert.deepEqual(arrays.loss_mask, [0, 0, 0, 0, 1, 1]);
  assert.deepEqual(arrays.logprobs, [-0.5, -0.25, 0, 0, -1, -2]);
});

Deno.test("flattenChain() keeps response_ids, loss_mask and logprobs equally long", () => {
  const turns = Array.from({ length: 7 }, (_, index) =>
    turn(index, {
      delta: Array.from({ length: 3 + index }, (_, i) => 1_000 * index + i),
      output: Array.from({ length: 2 * index }, (_, i) => 500_000 + i),
      logprobs: Array.from({ length: 2 * index }, (_, i) => -(i + 1) / 8),
      closing: index % 2 === 0 ? [EOS] : [],
    }, index === 3));
  const arrays = flattenChain(turns);
  const expectedResponse = turns.reduce(
    (sum, { tokens }, i) =>
      sum + (i === 0 ? 0 : tokens.delta.length) + tokens.output.length + tokens.closing.length,
    0,
  );
  assert.equal(arrays.prompt_ids.length, 3);
  assert.equal(arrays.response_ids.length, expectedResponse);
  assert.equal(arrays.loss_mask.length, expectedResponse);
  assert.equal(arrays.logprobs.length, expectedResponse);
  const sampled = turns.reduce(
    (sum, { tokens, record }) => sum + (record.masked ? 0 : tokens.output.length),
    0,
  );
  assert.equal(arrays.loss_mask.filter((m) => m === 1).length, sampled);
});

Deno.test("flattenChain() of no turns is empty", () => {
  assert.deepEqual(flattenChain([]), {
    prompt_ids: [],
    response_ids: [],
    loss_mask: [],
    logprobs: [],
    version_spans: [],
  });
});

Deno.test("flattenChain() returns plain number arrays", () => {
  const arrays = flattenChain([
    turn(0, { delta: [1], output: [2], logprobs: [-1], closing: [EOS] }),
  ]);
  for (const key of ["prompt_ids", "response_ids", "loss_mask", "logprobs"] as const) {
    assert.ok(Array.isArray(arrays[key]), key);
  }
  assert.doesNotThrow(() => JSON.stringify(arrays));
  assert.deepEqual(JSON.parse(JSON.stringify(arrays)), arrays);
});

Deno.test("flattenChain() keeps a first prompt longer than a spread can take", () => {
  const prompt = Array.from({ length: 300_000 }, (_, i) => i % 1000);
  const arrays = flattenChain([
    turn(0, { delta: prompt, output: [7, EOS], logprobs: [-0.5, -0.25], closing: [] }),
  ]);
  assert.deepEqual(arrays.prompt_ids, prompt);
  assert.deepEqual(arrays.response_ids, [7, EOS]);
});
