/**
 * Verdicts on tasks kept in the store for a while, each reached once across every process sharing
 * it: the first takes a lease and runs, the others wait for its verdict. Two kinds: a task's tests
 * run at its base commit, with no patch (`base_run`: the control that tells a patch that stopped
 * the tests, the agent's zero, from a task whose tests never run, nobody's score), and a task's
 * validation (`validation`: its tests at base and with a known fix, each run twice).
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
  /**
   * The tests run with the task's gold patch (its validation said so): when they do not at the
   * base commit, that is the task unsolved (a test file importing what the fix adds), not broken.
   */
  readonly gold?: boolean;
}

/** A verdict and when it was reached, in milliseconds since the epoch. */
export interface Dated {
  readonly at: number;
}

/** Verdicts of one kind by digest: one reached per digest while it is kept. */
export interface KeptVerdicts<T extends Dated> {
  /** The verdict kept for `digest`, else the one `reach` gives (kept, unless it throws). */
  get(digest: string, reach: () => Promise<T>): Promise<{ verdict: T; kept: boolean }>;
  /** Keeps `verdict` for `digest`, in place of any kept. */
  set(digest: string, verdict: T): Promise<void>;
}

/** Base runs by task: one run per task and backend while its verdict is kept. */
export interface BaseRuns {
  /** The base run of `task` on the backend named `backend`, running `run` when none is kept. */
  get(task: Task, backend: string, run: () => Promise<BaseRun>): Promise<BaseRun>;
  /** Keeps `run` as the base run of `task` on `backend`, in place of any kept. */
  keep(task: Task, backend: string, run: BaseRun): Promise<void>;
}

/** Base runs not kept anywhere: each asked for is run. */
export const UNKEPT_BASE_RUNS: BaseRuns = {
  get: (_task, _backend, run) => run(),
  keep: () => Promise.resolve(),
};

/** How verdicts are kept. */
export interface KeptVerdictsOptions {
  /** How long a verdict is kept: the task's environment may change (a runner installed). */
  readonly ttlMs: number;
  /** This process, in the lease of a verdict being reached. */
  readonly holder: string;
  /** The lease's time to live without renewal. */
  readonly leaseTtlMs: number;
  /** Longest a process waits for another's verdict on the same digest. */
  readonly waitMs: number;
}

/**
 * Verdicts of kind `kind` kept in `kv` by digest, each reached by one process at a time (and by one
 * call at a time in this process).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { keptVerdicts } from "./task_verdicts.ts";
 * const kv = await Deno.openKv(":memory:");
 * const verdicts = keptVerdicts<{ at: number }>(kv, "validation", {
 *   ttlMs: 60_000,
 *   holder: "p1",
 *   leaseTtlMs: 5000,
 *   waitMs: 60_000,
 * });
 * let reached = 0;
 * const reach = () => {
 *   reached++;
 *   return Promise.resolve({ at: Date.now() });
 * };
 * assert.equal((await verdicts.get("d1", reach)).kept, false);
 * assert.equal((await verdicts.get("d1", reach)).kept, true); // not reached again
 * assert.equal(reached, 1);
 * kv.close();
 * ```
 */
export function keptVerdicts<T extends Dated>(
  kv: Store,
  kind: string,
  options: KeptVerdictsOptions,
): KeptVerdicts<T> {
  const reaching = new Map<string, Promise<{ verdict: T; kept: boolean }>>();
  const kept = async (key: Deno.KvKey) => {
    const found = (await kv.get<T>(key)).value;
    return found !== null && found.at + options.ttlMs > Date.now() ? found : null;
  };
  const once = async (digest: string, reach: () => Promise<T>) => {
    const key = keys.taskVerdict(kind, digest);
    const found = await kept(key);
    if (found) return { verdict: found, kept: true };
    const lease = await acquireLease(kv, keys.taskVerdictLease(kind, digest), options.holder, {
      ttlMs: options.leaseTtlMs,
      waitMs: options.waitMs,
    });
    try {
      // Another process may have reached it while this one waited for the lease.
      const theirs = await kept(key);
      if (theirs) return { verdict: theirs, kept: true };
      const verdict = await reach();
      await kv.set(key, verdict, { expireIn: options.ttlMs });
      return { verdict, kept: false };
    } finally {
      await lease.release();
    }
  };
  return {
    async get(digest, reach) {
      let verdict = reaching.get(digest);
      if (!verdict) {
        verdict = once(digest, reach);
        reaching.set(digest, verdict);
        verdict.finally(() => reaching.delete(digest)).catch(() => {});
      }
      return await verdict;
    },
    async set(digest, verdict) {
      await kv.set(keys.taskVerdict(kind, digest), verdict, { expireIn: options.ttlMs });
    },
  };
}

/**
 * Base runs kept in `kv` by task digest and backend, each run by one process at a time.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { storeBaseRuns } from "./task_verdicts.ts";
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
export function storeBaseRuns(kv: Store, options: KeptVerdictsOptions): BaseRuns {
  const verdicts = keptVerdicts<BaseRun>(kv, "base_run", options);
  return {
    async get(task, backend, run) {
      return (await verdicts.get(await taskDigest(task, backend), run)).verdict;
    },
    async keep(task, backend, run) {
      await verdicts.set(await taskDigest(task, backend), run);
    },
  };
}

/** Fields of a task that do not change how its tests run. */
const NOT_GRADED = new Set(["problem_statement", "metadata", "judger"]);

/**
 * A digest of what decides how `task`'s tests run on the backend named `backend`: its repository
 * and commit, image, pre-commands, tests, environment and limits (not its problem statement,
 * labels or judger), and `extra` when given (a gold patch). Hex, 32 characters.
 */
export async function taskDigest(task: Task, backend: string, extra = ""): Promise<string> {
  // The task's own field names (the schema's), never a client's.
  const graded = Object.fromEntries(
    Object.entries(task).filter(([name, value]) => !NOT_GRADED.has(name) && value !== undefined),
  );
  return (await sha256Hex(JSON.stringify([backend, pairs(graded), extra]))).slice(0, 32);
}

/** The SHA-256 of `text` (as UTF-8), in hex: a verdict's key and what it is kept by. */
export async function sha256Hex(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
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
