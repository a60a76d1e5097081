/**
 * The settle stage alone, on the real Qwen3 tokenizer: flags, closing tokens and parsed blocks
 * from a generation, under both round-trip policies; and the early settling (`EarlySettle`)
 * against the plain one, on generations built to differ from what was told.
 */
import assert from "node:assert/strict";
import type { Generation } from "../../../lib/engine/mod.ts";
import type { ChatTokenizer } from "../../../lib/tokenizer/mod.ts";
import {
  EarlySettle,
  SETTLE_READS,
  settleOutput,
} from "../../../lib/session/stages/settle_output.ts";
import { qwen3 } from "../../_gateway.ts";
import { random } from "../../_random.ts";

const EOS = 151_645;

function generation(outputIds: number[], overrides: Partial<Generation> = {}): Generation {
  return {
    rid: "r",
    outputIds,
    logprobs: outputIds.map(() => -0.5),
    finish: { type: "stop", matched: EOS },
    weightVersions: ["v1"],
    versionSpans: [{ version: "v1", start: 0, end: outputIds.length }],
    aborts: 0,
    engineMs: 1,
    engineReportedMs: 1,
    ...overrides,
  };
}

const OPTIONS = {
  roundtripPolicy: "keep" as const,
  startsInReasoning: false,
  tools: new Map([["Read", undefined]]),
  live: null,
};

Deno.test("settleOutput() parses the sampled tokens and flags nothing for a canonical answer", async () => {
  const tokenizer = await qwen3();
  const ids = [...tokenizer.encode("<think>\nhm\n</think>\n\nDone."), EOS];
  const settled = settleOutput(tokenizer, generation(ids), OPTIONS);
  assert.deepEqual(settled, {
    output: ids,
    end: { reason: "end_of_turn", stopSequence: null },
    closing: [],
    flags: [],
    masked: false,
    blocks: [{ type: "thinking", thinking: "hm" }, { type: "text", text: "Done." }],
    reasoning: true,
  });
});

Deno.test("settleOutput() keeps a non-canonical split flagged, and masks it only under mask", async () => {
  const tokenizer = await qwen3();
  const ids = [...tokenizer.encode("hel"), ...tokenizer.encode("lo"), EOS];
  const kept = settleOutput(tokenizer, generation(ids), OPTIONS);
  assert.deepEqual(kept.flags, ["roundtrip_mismatch"]);
  assert.equal(kept.masked, false);
  const masked = settleOutput(tokenizer, generation(ids), { ...OPTIONS, roundtripPolicy: "mask" });
  assert.deepEqual(masked.flags, ["roundtrip_mismatch", "masked"]);
  assert.equal(masked.masked, true);
  assert.deepEqual(masked.blocks, [{ type: "text", text: "hello" }]);
});

Deno.test("settleOutput() closes an output cut by max_tokens and flags what the engine reports", async () => {
  const tokenizer = await qwen3();
  const ids = tokenizer.encode('<tool_call>\n{"name": "Read", "arguments": {');
  const settled = settleOutput(
    tokenizer,
    generation(ids, { finish: { type: "length" }, aborts: 2, failovers: 1, sessionResent: true }),
    OPTIONS,
  );
  assert.deepEqual(settled.end, { reason: "length", stopSequence: null });
  assert.deepEqual(settled.closing, [EOS]);
  assert.deepEqual(settled.flags, [
    "ill_formed",
    "engine_aborted",
    "engine_failover",
    "session_resent",
  ]);
  assert.equal(settled.blocks.length, 1);
  assert.equal(settled.blocks[0].type, "text");
});

/** What early settling takes: the settle options but the live stream. */
const EARLY = { roundtripPolicy: "keep" as const, startsInReasoning: false, tools: OPTIONS.tools };

/** A generation changed in one thing settling reads, or in what it does not read. */
const SAME: readonly [string, (g: Generation) => Generation][] = [
  ["nothing", (g) => g],
  ["a copy of every array", (g) => structuredClone(g)],
  ["not what settling reads", (g) => ({ ...g, engineMs: 9, logprobs: [], worker: "w2" })],
];
const CHANGES: readonly [string, (g: Generation, next: () => number) => Generation][] = [
  ["one output id", (g, next) => {
    const outputIds = [...g.outputIds];
    outputIds[Math.floor(next() * outputIds.length)] += 1;
    return { ...g, outputIds };
  }],
  ["one more output id", (g) => ({ ...g, outputIds: [...g.outputIds, EOS] })],
  ["the last id dropped", (g) => ({ ...g, outputIds: g.outputIds.slice(0, -1) })],
  ["the finish", (g) => ({ ...g, finish: { type: "length" } })],
  ["the stop matched", (g) => ({ ...g, finish: { type: "stop", matched: "</tool_call>" } })],
  ["aborts", (g) => ({ ...g, aborts: g.aborts + 1 })],
  ["a failover", (g) => ({ ...g, failovers: (g.failovers ?? 0) + 1 })],
  ["failovers 0 against none", (g) => ({ ...g, failovers: 0 })],
  ["resent", (g) => ({ ...g, sessionResent: true })],
];

/** `tokenizer`, counting the calls made of it. */
function counted(tokenizer: ChatTokenizer): { tokenizer: ChatTokenizer; calls: () => number } {
  let calls = 0;
  const proxy = new Proxy(tokenizer, {
    get(target, key) {
      const value = Reflect.get(target, key);
      return typeof value === "function"
        ? (...args: unknown[]) => (calls++, value.apply(target, args))
        : value;
    },
  });
  return { tokenizer: proxy, calls: () => calls };
}

Deno.test("EarlySettle gives what settleOutput() gives the generation returned, whatever was told", async () => {
  const real = await qwen3();
  const next = random(53);
  const texts = [
    "<think>\nhm\n</think>\n\nDone.",
    '<tool_call>\n{"name": "Read", "arguments": {"path": "a.ts"}}\n</tool_call>',
    "plain 文字 and 🎉 text",
  ];
  const options = {
    roundtripPolicy: "mask" as const,
    startsInReasoning: false,
    tools: OPTIONS.tools,
  };
  for (const text of texts) {
    // Canonical ids, and a non-canonical split of the same text.
    const canonical = [...real.encode(text), EOS];
    const split = [...real.encode(text.slice(0, 7)), ...real.encode(text.slice(7)), EOS];
    for (const ids of [canonical, split]) {
      const cases = [
        ...SAME.map(([what, change]) => ({ what, change, early: true })),
        ...CHANGES.map(([what, change]) => ({ what, change, early: false })),
      ];
      for (const { what, change, early: kept } of cases) {
        const told = generation(ids);
        const returned = change(told, next);
        const plain = settleOutput(real, returned, { ...options, live: null });
        const { tokenizer, calls } = counted(real);
        const early = new EarlySettle(tokenizer, options);
        early.tell(told);
        const before = calls();
        assert.deepEqual(early.take(returned), plain, `${what}: ${text}`);
        // The early settling was given back (no tokenizer work), or it was settled again.
        assert.equal(calls() === before, kept, `${what}: kept the early settling`);
        // Taken once: a second take settles again.
        assert.deepEqual(early.take(returned), plain, `${what}, again: ${text}`);
      }
    }
  }
});

Deno.test("EarlySettle keeps what was told as it was: the told arrays changed afterwards are settled again", async () => {
  const tokenizer = await qwen3();
  const ids = [...tokenizer.encode("first answer"), EOS];
  const told = generation(ids);
  const options = EARLY;
  const early = new EarlySettle(tokenizer, options);
  early.tell(told);
  // The same array, changed in place (an output that went on after the telling).
  told.outputIds.splice(0, told.outputIds.length, ...tokenizer.encode("second"), EOS);
  const plain = settleOutput(tokenizer, told, { ...options, live: null });
  assert.deepEqual(early.take(told), plain);
  assert.deepEqual(plain.blocks, [{ type: "text", text: "second" }]);
});

Deno.test("EarlySettle: a later telling replaces an earlier one (a failover), and nothing told settles plainly", async () => {
  const tokenizer = await qwen3();
  const first = generation([...tokenizer.encode("worker one"), EOS]);
  const second = generation([...tokenizer.encode("worker two"), EOS], { failovers: 1 });
  const options = EARLY;
  const early = new EarlySettle(tokenizer, options);
  early.tell(first);
  early.tell(second);
  const plain = (g: Generation) => settleOutput(tokenizer, g, { ...options, live: null });
  assert.deepEqual(early.take(second), plain(second));
  early.tell(second);
  assert.deepEqual(early.take(first), plain(first));
  assert.deepEqual(new EarlySettle(tokenizer, options).take(first), plain(first));
});

Deno.test("SETTLE_READS names every field of a generation settling reads", async () => {
  // Each field but those, changed, settles the same; each of those, changed, settles otherwise.
  const tokenizer = await qwen3();
  const base = generation([...tokenizer.encode("x"), EOS]);
  const changed: Record<(typeof SETTLE_READS)[number], Generation> = {
    outputIds: { ...base, outputIds: [...tokenizer.encode("y"), EOS] },
    finish: { ...base, finish: { type: "length" } },
    aborts: { ...base, aborts: 1 },
    failovers: { ...base, failovers: 1 },
    sessionResent: { ...base, sessionResent: true },
  };
  const plain = settleOutput(tokenizer, base, OPTIONS);
  for (const key of SETTLE_READS) {
    assert.notDeepEqual(settleOutput(tokenizer, changed[key], OPTIONS), plain, key);
  }
});
