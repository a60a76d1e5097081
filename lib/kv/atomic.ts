/**
 * Atomic commits that survive several processes on one KV file: a commit with checks can throw
 * `database is locked` there (reference deno-platform.md §1), which means "not applied, try
 * again", the same as a failed check.
 *
 * @module
 */

/** Tries before a locked database is reported. */
const LOCKED_TRIES = 50;

/**
 * Commits the operation `build` returns, rebuilding and retrying it while the database is
 * locked. Resolves to the commit result (`ok: false` when a check failed).
 *
 * @example
 * ```ts
 * const result = await commit(() => kv.atomic().check(entry).set(key, value));
 * ```
 */
export async function commit(
  build: () => Deno.AtomicOperation,
): Promise<Deno.KvCommitResult | Deno.KvCommitError> {
  for (let attempt = 1;; attempt++) {
    try {
      return await build().commit();
    } catch (error) {
      if (!isLocked(error) || attempt >= LOCKED_TRIES) throw error;
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 2 * attempt));
    }
  }
}

function isLocked(error: unknown): boolean {
  return error instanceof Error && /database is locked/i.test(error.message);
}
