/**
 * What an evaluation observed, before any judger scores it: whether the patch applied, which
 * tests passed and failed, how the test command ended, and the end of its log.
 *
 * @module
 */
import type { VerifierReward } from "./harbor_reward.ts";

/** Why an evaluation ended as it did. */
export type EvaluationReason =
  /** The tests passed. */
  | "passed"
  /** The tests ran and did not all pass. */
  | "tests_failed"
  /** A step ran past the evaluation's time limit and was killed. */
  | "timeout"
  /** `git apply` refused the patch. */
  | "patch_failed"
  /** The patch touches paths outside the repository; it was never applied. */
  | "patch_rejected"
  /** A task's pre-command failed: the task's environment, not the patch, is at fault. */
  | "pre_command_failed"
  /** The task's `test_patch` did not apply over the patch: the task is at fault. */
  | "test_patch_failed"
  /**
   * A Harbor task's `test.sh` left no reward file, or one that does not parse, with the patch;
   * at the base commit it writes one (the patch's fault).
   */
  | "no_reward"
  /** The test command or its runner could not run, at the base commit too: the task's fault. */
  | "runner_failed"
  /**
   * The test command ran, but no test did (none collected, a listed test missing, no reward
   * written), at the base commit too: the task's fault.
   */
  | "no_tests_ran";

/**
 * The reasons that are the task's (or its environment's) fault, never the patch's: such an
 * evaluation has no score, and a rollout attempt ending with one is the infrastructure's.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { TASK_FAULTS } from "./evidence.ts";
 * assert.ok(TASK_FAULTS.has("runner_failed"));
 * assert.ok(!TASK_FAULTS.has("tests_failed"));
 * ```
 */
export const TASK_FAULTS: ReadonlySet<EvaluationReason> = new Set<EvaluationReason>([
  "pre_command_failed",
  "test_patch_failed",
  "runner_failed",
  "no_tests_ran",
]);

/** The evidence of one evaluation. Field names are those of the `/evaluate` response. */
export interface Evidence {
  readonly applied_cleanly: boolean;
  readonly reason: EvaluationReason;
  /** What went wrong, in words, when the reason is not `passed` or `tests_failed`. */
  readonly detail: string | null;
  /** Tests by outcome; with test lists, only the listed tests (a missing one counts as failed). */
  readonly tests: { readonly passed: string[]; readonly failed: string[] };
  /** Protected paths (and `test_patch` paths) the patch changed; they were put back. */
  readonly tampered: string[];
  /** Exit status of the last command run; `null` when it was killed or none ran. */
  readonly exit_code: number | null;
  /** The end of the last command's output (stdout and stderr interleaved). */
  readonly log_tail: string;
  /** A Harbor task's reward as its verifier wrote it; only on Harbor tasks that left one. */
  readonly verifier?: VerifierReward;
  /**
   * How the tests fared at the base commit (no patch), when this run showed no evidence that they
   * ran and the base commit was asked whose fault that was (`detail`: what it lacked, if anything).
   */
  readonly base_run?: { readonly reason: EvaluationReason; readonly detail: string | null };
}

/** Longest log tail kept in a result, in characters. */
export const LOG_TAIL_CHARS = 8000;

/** The last {@linkcode LOG_TAIL_CHARS} characters of `log`, starting at a line when it can. */
export function logTail(log: string): string {
  if (log.length <= LOG_TAIL_CHARS) return log;
  const tail = log.slice(-LOG_TAIL_CHARS);
  const newline = tail.indexOf("\n");
  return newline >= 0 && newline < 200 ? tail.slice(newline + 1) : tail;
}
