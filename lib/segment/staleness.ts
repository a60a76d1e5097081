/**
 * How far behind the trainer's weights a segment's tokens were sampled. Weight versions are
 * the integers trainers name their updates by (slime's `weight_version=str(step)`); SGLang's
 * `default`, the version before any update named one, counts as 0. A token is stale when
 * `current - version > max`: an export masks it (loss mask 0, kept as context) or drops the
 * segment holding it.
 *
 * @module
 */
import type { VersionSpan } from "../engine/mod.ts";
import type { CodedError } from "../errors/mod.ts";

/** The trainer's bound on staleness, and what to do past it. */
export interface StalenessPolicy {
  /** The version the trainer is at now. */
  readonly current: number;
  /** Most versions a trained token may lag `current` by. */
  readonly max: number;
  /** A stale token: its loss mask zeroed, or its whole segment left out. */
  readonly stale: "mask" | "drop";
}

/** A weight version that is not a number, so its staleness cannot be told. */
export class WeightVersionError extends Error implements CodedError {
  readonly code = "invalid_request" as const;
  constructor(version: string) {
    super(
      `Weight version ${JSON.stringify(version.slice(0, 64))} is not an integer (nor "default"): ` +
        "max_staleness compares integer versions",
    );
    this.name = "WeightVersionError";
  }
}

/**
 * A weight version as a number: its integer, or 0 for `default`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { versionNumber } from "./staleness.ts";
 * assert.equal(versionNumber("12"), 12);
 * assert.equal(versionNumber("default"), 0);
 * ```
 * @throws {WeightVersionError} for any other version.
 */
export function versionNumber(version: string): number {
  if (version === "default") return 0;
  if (!/^\d{1,15}$/.test(version)) throw new WeightVersionError(version);
  return Number(version);
}

/**
 * The positions of `spans` sampled by weights more than `policy.max` versions behind.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { staleSpans } from "./staleness.ts";
 * const spans = [{ version: "3", start: 0, end: 4 }, { version: "5", start: 4, end: 6 }];
 * assert.deepEqual(staleSpans(spans, { current: 5, max: 1, stale: "mask" }), [
 *   { version: "3", start: 0, end: 4 },
 * ]);
 * ```
 */
export function staleSpans(
  spans: readonly VersionSpan[],
  policy: StalenessPolicy,
): VersionSpan[] {
  return spans.filter((span) => policy.current - versionNumber(span.version) > policy.max);
}
