/**
 * Atomic commits that survive several processes on one KV file: a commit with checks can throw
 * `database is locked` there (reference deno-platform.md §1), which means "not applied, try
 * again", the same as a failed check.
 *
 * @module
 */

import type { GatewayMetrics } from "../metrics/mod.ts";
import { sleep } from "../timing/mod.ts";
import type { StoreAtomic } from "./store.ts";

/** Tries before a locked database is reported. */
const LOCKED_TRIES = 50;

/**
 * Commits the operation `build` returns, rebuilding and retrying it while the database is
 * locked (each retry counted in `metrics`, when given). Resolves to the commit result
 * (`ok: false` when a check failed).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { commit } from "./atomic.ts";
 * const kv = await Deno.openKv(":memory:");
 * // Retried while KV reports itself locked; a failed check is an answer, not an error.
 * const result = await commit(() =>
 *   kv.atomic().check({ key: ["k"], versionstamp: null }).set(["k"], 1)
 * );
 * assert.equal(result.ok, true);
 * kv.close();
 * ```
 */
export async function commit(
  build: () => StoreAtomic,
  metrics?: GatewayMetrics,
): Promise<Deno.KvCommitResult | Deno.KvCommitError> {
  for (let attempt = 1;; attempt++) {
    try {
      return await build().commit();
    } catch (error) {
      if (!isLocked(error) || attempt >= LOCKED_TRIES) throw error;
      metrics?.kvCommitRetries.inc();
      await sleep(Math.random() * 2 * attempt);
    }
  }
}

function isLocked(error: unknown): boolean {
  return error instanceof Error && /database is locked/i.test(error.message);
}
