/**
 * The settle stage alone, on the real Qwen3 tokenizer: flags, closing tokens and parsed blocks
 * from a generation, under both round-trip policies.
 */
import assert from "node:assert/strict";
import type { Generation } from "../../../lib/engine/mod.ts";
import { settleOutput } from "../../../lib/session/stages/settle_output.ts";
import { qwen3 } from "../../_gateway.ts";

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
