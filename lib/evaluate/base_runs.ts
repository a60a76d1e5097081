/**
 * The task's tests run at its base commit, with no patch: the control that tells a patch that
 * stopped the tests (the agent's zero) from a task whose tests never run (nobody's score). Kept
 * in the store by the task's digest for `ttlMs`, and run once across every process sharing it: the
 * first takes a lease, the others wait for its verdict.
 *
 * @module
 */
import { acquireLease, keys, type Store } from "../kv/mod.ts";
import type { EvaluationReason } from "./evidence.ts";
import type { Task } from "./task.ts";

/** How the task's tests fared at its base commit. */
export interface BaseRun {
  /**
   * Why its run does not count as the tests having run (a reason of `TASK_FAULTS`), in words;
   * `null` when they ran.
   */
  readonly missing: { readonly reason: EvaluationReason; readonly detail: string } | null;
  /** Its evaluation's reason. */
  readonly reason: EvaluationReason;
  /** When it ran, in milliseconds since the epoch. */
  readonly at: number;
}

/** Base runs by task: one run per task and backend while its verdict is kept. */
export interface BaseRuns {
  /** The base run of `task` on the backend named `backend`, running `run` when none is kept. */
  get(task: Task, backend: string, run: () => Promise<BaseRun>): Promise<BaseRun>;
}

/** Base runs not kept anywhere: each asked for is run. */
export const UNKEPT_BASE_RUNS: BaseRuns = { get: (_task, _backend, run) => run() };

/** How base runs are kept. */
export interface StoreBaseRunsOptions {
  /** How long a verdict is kept: the task's environment may change (a runner installed). */
  readonly ttlMs: number;
  /** This process, in the lease of a run. */
  readonly holder: string;
  /** The lease's time to live without renewal. */
  readonly leaseTtlMs: number;
  /** Longest a process waits for another's run of the same task. */
  readonly waitMs: number;
}

/**
 * Base runs kept in `kv` by task digest, each run by one process at a time.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { storeBaseRuns } from "./base_runs.ts";
 * import { TaskSchema } from "./task.ts";
 * const kv = await Deno.openKv(":memory:");
 * const runs = storeBaseRuns(kv, { ttlMs: 60_000, holder: "p1", leaseTtlMs: 5000, waitMs: 60_000 });
 * const task = TaskSchema.parse({ repo: "/r", base_commit: "HEAD", eval_cmd: "false" });
 * let ran = 0;
 * const run = () => {
 *   ran++;
 *   return Promise.resolve({ missing: null, reason: "tests_failed" as const, at: Date.now() });
 * };
 * await runs.get(task, "local", run);
 * await runs.get(task, "local", run); // kept: not run again
 * assert.equal(ran, 1);
 * kv.close();
 * ```
 */
export function storeBaseRuns(kv: Store, options: StoreBaseRunsOptions): BaseRuns {
  const running = new Map<string, Promise<BaseRun>>();
  const kept = async (key: Deno.KvKey) => {
    const found = (await kv.get<BaseRun>(key)).value;
    return found !== null && found.at + options.ttlMs > Date.now() ? found : null;
  };
  const once = async (digest: string, run: () => Promise<BaseRun>) => {
    const key = keys.taskBaseRun(digest);
    const found = await kept(key);
    if (found) return found;
    const lease = await acquireLease(kv, keys.taskBaseRunLease(digest), options.holder, {
      ttlMs: options.leaseTtlMs,
      waitMs: options.waitMs,
    });
    try {
      // Another process may have run it while this one waited for the lease.
      const theirs = await kept(key);
      if (theirs) return theirs;
      const verdict = await run();
      await kv.set(key, verdict, { expireIn: options.ttlMs });
      return verdict;
    } finally {
      await lease.release();
    }
  };
  return {
    async get(task, backend, run) {
      const digest = await taskDigest(task, backend);
      let verdict = running.get(digest);
      if (!verdict) {
        verdict = once(digest, run);
        running.set(digest, verdict);
        verdict.finally(() => running.delete(digest)).catch(() => {});
      }
      return await verdict;
    },
  };
}

/** Fields of a task that do not change how its tests run. */
const NOT_GRADED = new Set(["problem_statement", "metadata", "judger"]);

/**
 * A digest of what decides how `task`'s tests run on the backend named `backend`: its repository
 * and commit, image, pre-commands, tests, environment and limits (not its problem statement,
 * labels or judger). Hex, 32 characters.
 */
export async function taskDigest(task: Task, backend: string): Promise<string> {
  // The task's own field names (the schema's), never a client's.
  const graded = Object.fromEntries(
    Object.entries(task).filter(([name, value]) => !NOT_GRADED.has(name) && value !== undefined),
  );
  const text = JSON.stringify([backend, pairs(graded)]);
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return Array.from(new Uint8Array(digest).slice(0, 16), (b) => b.toString(16).padStart(2, "0"))
    .join("");
}

/**
 * `value` with every object as its `[key, value]` pairs in key order, so equal values give equal
 * JSON (and no client's key becomes a property name).
 */
function pairs(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(pairs);
  if (value === null || typeof value !== "object") return value;
  return Object.entries(value).sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0)
    .map(([key, inner]) => [key, pairs(inner)]);
}
