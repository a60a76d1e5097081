/**
 * Whose failure a finished job was: the agent's (the episode ran, and its reward, 0 included, is
 * real) or the infrastructure's (a sandbox, the network, the engine, a gateway process, a CLI that
 * crashed before the model was heard), by one table of the reasons an attempt ends with. An
 * infrastructure failure is tried again in a fresh attempt where a retry can help, and its job
 * never carries a reward: a fake zero would bias its group's advantages.
 *
 * @module
 */
import { backoffMs } from "../timing/mod.ts";

/** Whose failure a job's end was. */
export type JobOutcome = "agent" | "infra";

/** How one way of ending is judged. */
export interface OutcomeRule {
  readonly outcome: JobOutcome;
  /** An attempt that ended so is tried again, while attempts and the group's budget last. */
  readonly retry: boolean;
  /** What it means, as docs/rollouts.md says it. */
  readonly meaning: string;
}

const rule = (outcome: JobOutcome, retry: boolean, meaning: string): OutcomeRule => ({
  outcome,
  retry,
  meaning,
});

/**
 * Every reason an attempt ends with, `done` for one graded, and how it is judged. A reason not
 * listed is the infrastructure's, retried: a new failure is never taken for the agent's.
 */
export const OUTCOME_TABLE: ReadonlyMap<string, OutcomeRule> = new Map([
  ["done", rule("agent", false, "graded: the reward is real, 0 included")],
  [
    "agent_timeout",
    rule("agent", false, "the agent ran past `budgets.agent_ms` (`on_agent_timeout: abort`)"),
  ],
  [
    "sandbox_unavailable",
    rule(
      "infra",
      true,
      "a sandbox did not boot (the backend refused or failed, or the boot ran past " +
        "`budgets.boot_ms`), or vanished under the job",
    ),
  ],
  ["setup_failed", rule("infra", true, "a pre-command, git, or the agent CLI's install failed")],
  [
    "agent_crashed",
    rule("infra", true, "the agent CLI ended in failure before the model answered anything"),
  ],
  [
    "engine_unavailable",
    rule(
      "infra",
      true,
      "the agent CLI ended in failure after the engine was unavailable to its turns, past its " +
        "own retries",
    ),
  ],
  ["judger_failed", rule("infra", true, "the judger failed while grading")],
  [
    "env_failed",
    rule("infra", true, "an `env_loop` environment was unreachable or broke protocol"),
  ],
  ["model_failed", rule("infra", true, "an `env_loop` turn the gateway could not answer")],
  ["worker_lost", rule("infra", true, "the gateway process running the job died")],
  ["shutdown", rule("infra", true, "the gateway process running the job shut down")],
  ["internal_error", rule("infra", true, "a gateway bug, logged")],
  ["store_unavailable", rule("infra", true, "the store (PostgreSQL) did not answer")],
  [
    "runner_failed",
    rule(
      "infra",
      false,
      "the task's test command or runner cannot run, at the base commit too: the task's fault",
    ),
  ],
  [
    "no_tests_ran",
    rule(
      "infra",
      false,
      "the task's tests ran no test (none collected, a listed one missing, no reward written), " +
        "at the base commit too: the task's fault",
    ),
  ],
  [
    "pre_command_failed",
    rule("infra", false, "a pre-command of the task failed while grading: the task's fault"),
  ],
  [
    "test_patch_failed",
    rule("infra", false, "the task's `test_patch` does not apply: the task's fault"),
  ],
  [
    "repo_unavailable",
    rule("infra", false, "the task's repository or commit cannot be had: a retry changes nothing"),
  ],
  ["agent_unavailable", rule("infra", false, "the harness's CLI is not on this machine")],
  [
    "wall_clock_timeout",
    rule("infra", false, "the job ran past its wall-clock limit outside the agent: none is left"),
  ],
  ["cancelled", rule("infra", false, "cancelled by `DELETE /rollout/:id`")],
]);

/**
 * How an attempt that ended with `reason` is judged (`done` for a graded one).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { judgeEnd } from "./outcome.ts";
 * assert.deepEqual(judgeEnd("done").outcome, "agent");
 * assert.deepEqual([judgeEnd("sandbox_unavailable").outcome, judgeEnd("sandbox_unavailable").retry], ["infra", true]);
 * assert.deepEqual([judgeEnd("a_new_failure").outcome, judgeEnd("a_new_failure").retry], ["infra", true]);
 * ```
 */
export function judgeEnd(reason: string): OutcomeRule {
  return OUTCOME_TABLE.get(reason) ?? rule("infra", true, "not in the table");
}

/** Longest wait before a retry, in milliseconds. */
export const MAX_RETRY_DELAY_MS = 60_000;

/**
 * How long to wait before attempt `attempt + 1` after attempt `attempt` ended on the
 * infrastructure: exponential from `baseMs`, capped, with full jitter in [½, 1½) of it so a
 * broken backend's many failures do not come back at once. `random` is in [0, 1).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { retryDelayMs } from "./outcome.ts";
 * assert.equal(retryDelayMs(1, 1000, 0.5), 1000);
 * assert.equal(retryDelayMs(3, 1000, 0.5), 4000);
 * assert.equal(retryDelayMs(20, 1000, 0), 30_000);
 * ```
 */
export function retryDelayMs(attempt: number, baseMs: number, random: number): number {
  return backoffMs(attempt, baseMs, random, MAX_RETRY_DELAY_MS);
}
