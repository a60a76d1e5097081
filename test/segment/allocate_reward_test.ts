import assert from "node:assert/strict";
import type { ChainHeader, SegmentKind } from "../../lib/chain/mod.ts";
import {
  type Segment,
  type SegmentPolicy,
  selectSegments,
  WeightVersionError,
} from "../../lib/segment/mod.ts";
import type { RewardedSession } from "../../lib/session/mod.ts";

const SESSION = {
  id: "s1",
  reward: { score: 1.2 },
  metadata: {},
} as unknown as RewardedSession;

function segment(index: number, kind: SegmentKind, tokens = 10): Segment {
  return {
    index,
    kind,
    header: { id: `c${index}` } as ChainHeader,
    turns: [],
    arrays: {
      prompt_ids: Array(tokens / 2).fill(1),
      response_ids: Array(tokens / 2).fill(2),
      loss_mask: Array(tokens / 2).fill(1),
      logprobs: Array(tokens / 2).fill(-0.5),
      version_spans: [{ version: "default", start: 0, end: tokens / 2 }],
    },
    lineage: { parent: null, dispatch: null, agent_id: null },
    stats: {
      turns: 1,
      finish_reason: "end_of_turn",
      aborts: 0,
      masked_turns: 0,
      ill_formed_turns: 0,
      tool_turns: 0,
      weight_versions: [],
    },
  };
}

const POLICY: SegmentPolicy = {
  allocation: "uniform",
  includeSide: false,
  maxSegments: 64,
  maxSegmentTokens: 0,
  overlong: "mask",
};
const FOUR = [
  segment(0, "wipe"),
  segment(1, "subagent"),
  segment(2, "subagent"),
  segment(3, "final"),
];

Deno.test("selectSegments() shares the score uniformly, copies it, or gives it to the final only", () => {
  const rewards = (allocation: SegmentPolicy["allocation"]) =>
    selectSegments(SESSION, FOUR, { ...POLICY, allocation }).segments.map((s) => s.reward);
  assert.deepEqual(rewards("uniform"), [0.3, 0.3, 0.3, 0.3]);
  assert.deepEqual(rewards("copy"), [1.2, 1.2, 1.2, 1.2]);
  assert.deepEqual(rewards("final_only"), [0, 0, 0, 1.2]);
});

Deno.test("selectSegments() gives null rewards before the trainer set a score", () => {
  const unscored: RewardedSession = { ...SESSION, reward: null };
  assert.deepEqual(selectSegments(unscored, FOUR, POLICY).segments.map((s) => s.reward), [
    null,
    null,
    null,
    null,
  ]);
});

Deno.test("selectSegments() leaves side segments out, recorded, unless they are included", () => {
  const all = [segment(0, "final"), segment(1, "side")];
  const without = selectSegments(SESSION, all, POLICY);
  assert.deepEqual(without.segments.map((s) => s.kind), ["final"]);
  assert.deepEqual(without.segments.map((s) => s.reward), [1.2]);
  assert.deepEqual(without.dropped.map((d) => [d.chain_id, d.kind]), [["c1", "side"]]);
  assert.match(without.dropped[0].reason, /side segment/);
  const withSide = selectSegments(SESSION, all, { ...POLICY, includeSide: true });
  assert.deepEqual(withSide.segments.map((s) => [s.kind, s.reward]), [["final", 0.6], [
    "side",
    0.6,
  ]]);
});

Deno.test("selectSegments() over max_segments keeps the head and the final, and records the rest", () => {
  const six = [0, 1, 2, 3, 4].map((i) => segment(i, i === 0 ? "wipe" : "subagent"));
  const all = [...six, segment(5, "final")];
  const { segments, dropped } = selectSegments(SESSION, all, { ...POLICY, maxSegments: 3 });
  assert.deepEqual(segments.map((s) => s.header.id), ["c0", "c1", "c5"]);
  assert.deepEqual(segments.map((s) => s.reward), [1.2 / 3, 1.2 / 3, 1.2 / 3]);
  assert.deepEqual(dropped.map((d) => d.chain_id), ["c2", "c3", "c4"]);
  assert.ok(dropped.every((d) => d.reason === "over max_segments 3"));
});

Deno.test("selectSegments() keeps a final that is not last, and works without a final", () => {
  const finalFirst = [
    segment(0, "final"),
    segment(1, "side"),
    segment(2, "subagent"),
    segment(3, "subagent"),
  ];
  const kept = selectSegments(SESSION, finalFirst, { ...POLICY, maxSegments: 2 }).segments;
  assert.deepEqual(kept.map((s) => s.header.id), ["c0", "c2"]);
  const noFinal = [segment(0, "wipe"), segment(1, "subagent"), segment(2, "subagent")];
  assert.deepEqual(
    selectSegments(SESSION, noFinal, { ...POLICY, maxSegments: 2 }).segments.map((s) =>
      s.header.id
    ),
    ["c0", "c2"],
  );
});

Deno.test("selectSegments() masks or drops a segment over max_segment_tokens, with the reason", () => {
  const all = [segment(0, "subagent", 40), segment(1, "final", 10)];
  const masked = selectSegments(SESSION, all, { ...POLICY, maxSegmentTokens: 20 });
  assert.deepEqual(masked.segments.map((s) => s.masked), [
    "40 tokens > max_segment_tokens 20",
    null,
  ]);
  assert.deepEqual(masked.segments[0].arrays.loss_mask, Array(20).fill(0));
  assert.deepEqual(masked.segments[0].arrays.response_ids, all[0].arrays.response_ids);
  assert.deepEqual(masked.segments.map((s) => s.reward), [0.6, 0.6]);
  const droppedToo = selectSegments(SESSION, all, {
    ...POLICY,
    maxSegmentTokens: 20,
    overlong: "drop",
  });
  assert.deepEqual(droppedToo.segments.map((s) => s.header.id), ["c1"]);
  assert.deepEqual(droppedToo.dropped, [{
    chain_id: "c0",
    kind: "subagent",
    reason: "40 tokens > max_segment_tokens 20",
  }]);
});

/** A final segment of 8 response tokens: 0..3 sampled by `old`, 3..4 context, 4..8 by `now`. */
function versioned(index: number, old: string, now: string): Segment {
  const base = segment(index, "final", 16);
  return {
    ...base,
    arrays: {
      ...base.arrays,
      loss_mask: [1, 1, 1, 0, 1, 1, 1, 1],
      version_spans: [
        { version: old, start: 0, end: 3 },
        { version: now, start: 4, end: 8 },
      ],
    },
  };
}

Deno.test("selectSegments() masks tokens sampled by weights past max_staleness, or drops their segment", () => {
  const all = [versioned(0, "default", "3"), versioned(1, "2", "3"), versioned(2, "3", "3")];
  const staleness = { current: 3, max: 1, stale: "mask" as const };
  const masked = selectSegments(SESSION, all, { ...POLICY, staleness });
  assert.deepEqual(masked.segments.map((s) => s.arrays.loss_mask), [
    [0, 0, 0, 0, 1, 1, 1, 1], // "default" is 0: three behind
    [1, 1, 1, 0, 1, 1, 1, 1], // one behind: within the bound
    [1, 1, 1, 0, 1, 1, 1, 1],
  ]);
  assert.deepEqual(masked.segments.map((s) => s.staleTokens), [3, 0, 0]);
  assert.deepEqual(all[0].arrays.loss_mask, [1, 1, 1, 0, 1, 1, 1, 1], "the input is untouched");
  assert.deepEqual(masked.dropped, []);

  const strict = selectSegments(SESSION, all, {
    ...POLICY,
    staleness: { current: 3, max: 0, stale: "drop" },
  });
  assert.deepEqual(strict.segments.map((s) => s.header.id), ["c2"]);
  assert.deepEqual(strict.segments.map((s) => s.reward), [1.2], "the score goes to what is kept");
  assert.deepEqual(strict.dropped, [
    { chain_id: "c0", kind: "final", reason: "3 tokens sampled by weight versions older than 3" },
    { chain_id: "c1", kind: "final", reason: "3 tokens sampled by weight versions older than 3" },
  ]);
  assert.throws(
    () => selectSegments(SESSION, [versioned(0, "v1", "3")], { ...POLICY, staleness }),
    (error: unknown) => error instanceof WeightVersionError && /"v1"/.test(error.message),
  );
});
