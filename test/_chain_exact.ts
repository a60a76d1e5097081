/**
 * The token-exactness checks of a recorded chain against the engine calls that produced it,
 * shared by the tests that drive many sessions or several gateway processes.
 *
 * @module
 */
import assert from "node:assert/strict";
import { type EngineCall, scriptedLogprob } from "../lib/scripted_engine/mod.ts";
import type { SampleJson } from "./_gateway.ts";

/** True when `tokens` starts with every token of `prefix`. */
export function startsWith(tokens: readonly number[], prefix: readonly number[]): boolean {
  if (tokens.length < prefix.length) return false;
  for (let i = 0; i < prefix.length; i++) if (tokens[i] !== prefix[i]) return false;
  return true;
}

/** The calls, in arrival order, whose prompt starts with the sample's first prompt. */
export function callsOfSample(calls: readonly EngineCall[], sample: SampleJson): EngineCall[] {
  return calls.filter((call) => startsWith(call.inputIds, sample.prompt_ids));
}

/**
 * Asserts that `samples` is one final chain recorded from exactly `calls`, in order: every
 * call's prompt is the previous call's prompt and output followed by a delta (T2), the chain's
 * tokens are the last prompt and output, and the mask-1 tokens and their logprobs are the
 * outputs, whole.
 */
export function assertChainExact(
  calls: readonly EngineCall[],
  samples: readonly SampleJson[],
  label = "",
): void {
  assert.equal(samples.length, 1, `${label} one chain`);
  const [sample] = samples;
  assert.equal(sample.kind, "final", `${label} a final chain`);
  assert.equal(sample.turns.length, calls.length, `${label} one recorded turn per engine call`);
  const outputs = calls.map((call, k) => {
    assert.ok(call.output, `${label} call ${k} finished`);
    return call.output;
  });
  for (let k = 0; k + 1 < calls.length; k++) {
    const previous = [...calls[k].inputIds, ...outputs[k]];
    assert.deepEqual(
      calls[k + 1].inputIds.slice(0, previous.length),
      previous,
      `${label} call ${k + 1} extends call ${k}`,
    );
  }
  assert.deepEqual(sample.prompt_ids, calls[0].inputIds, `${label} prompt_ids`);
  assert.deepEqual(
    [...sample.prompt_ids, ...sample.response_ids],
    [...calls.at(-1)!.inputIds, ...outputs.at(-1)!],
    `${label} the chain is the last prompt and output`,
  );
  const sampled = sample.response_ids.filter((_, i) => sample.loss_mask[i] === 1);
  assert.deepEqual(sampled, outputs.flat(), `${label} mask-1 tokens are the outputs`);
  assert.deepEqual(
    sample.logprobs.filter((_, i) => sample.loss_mask[i] === 1),
    outputs.flatMap((output) => output.map((token, i) => scriptedLogprob(token, i))),
    `${label} mask-1 logprobs are the engine's`,
  );
}
