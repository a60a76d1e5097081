/**
 * The scripted engine's logprobs: a deterministic function of token and output position, so a
 * test can predict every logprob the engine reports.
 *
 * @module
 */

/**
 * The deterministic logprob of `token` sampled at output `position`: a negative float.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { scriptedLogprob } from "./logprobs.ts";
 * assert.equal(scriptedLogprob(0, 0), -1 / 4096);
 * assert.ok(scriptedLogprob(9707, 3) < 0);
 * ```
 */
export function scriptedLogprob(token: number, position: number): number {
  return -(((token * 7919 + position * 104729) % 10007) + 1) / 4096;
}

/**
 * The deterministic `output_top_logprobs` entry at output `position` with `k` alternatives, in
 * SGLang's shape (`[logprob, id, text]`, most likely first): the sampled token, then the next
 * ids, each less likely.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { scriptedLogprob, scriptedTopLogprobs } from "./logprobs.ts";
 * const top = scriptedTopLogprobs(9707, 3, 2);
 * assert.deepEqual(top[0], [scriptedLogprob(9707, 3), 9707, null]); // the sampled token first
 * assert.deepEqual(top[1], [scriptedLogprob(9707, 3) - 1, 9708, null]);
 * ```
 */
export function scriptedTopLogprobs(
  token: number,
  position: number,
  k: number,
): [number, number, null][] {
  return Array.from(
    { length: k },
    (_, j) => [scriptedLogprob(token, position) - j, token + j, null],
  );
}
