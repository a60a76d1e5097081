/**
 * The last stage of grading: a run of the test command that ended by itself, judged into
 * evidence. Which tests passed and failed, named as the grading mode names them; whether the run
 * passed (the command's exit status, the listed tests, a Harbor verifier's reward); and what the
 * evidence lacks to show that the tests ran (`test_evidence.ts`). Nothing is run or read: the
 * run's output and the reward read back are all it judges by.
 *
 * @module
 */
import type { ExecResult } from "../sandbox/mod.ts";
import { type Evidence, logTail } from "./evidence.ts";
import type { VerifierReward } from "./harbor_reward.ts";
import type { GradingMode, Task } from "./task.ts";
import { type MissingEvidence, missingEvidence } from "./test_evidence.ts";
import { parseTestOutput, type TestReport } from "./test_report.ts";

/** A run's evidence, and what it lacks to show that the tests ran. */
export interface RunEvidence {
  readonly evidence: Evidence;
  /** What the evidence lacks, once the tests were run; `null` when nothing, or they never ran. */
  readonly missing: MissingEvidence | null;
}

/** A run of a task's test command that ended by itself (not killed at the time limit). */
export interface FinishedRun {
  readonly mode: GradingMode;
  readonly task: Task;
  /** How the test command ended: its exit status and its output, stdout and stderr interleaved. */
  readonly result: Pick<ExecResult, "exitCode" | "stdout">;
  /** Protected paths (and `test_patch` paths) the patch changed; they were put back. */
  readonly tampered: string[];
  /**
   * A Harbor verifier's reward as read back, or why there is none; `null` in the other modes,
   * required in Harbor's.
   */
  readonly reward: VerifierReward | { readonly error: string } | null;
}

/**
 * The evidence of a finished run and what it lacks. A Harbor run passes when its reward is above
 * 0 (`no_reward` when it has none), never by its exit status; a run of test lists passes when
 * every listed test passed, and names those only (a missing one failed); the other modes pass by
 * exit status 0.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { evidenceOf } from "./run_evidence.ts";
 * import { TaskSchema } from "./task.ts";
 * const task = TaskSchema.parse({ repo: "/r", base_commit: "HEAD", eval_cmd: "python3 -m pytest" });
 * const output = "FAILED t.py::test_b - assert 1 == 2\n";
 * const run = { mode: "eval_cmd" as const, task, result: { exitCode: 1, stdout: output } };
 * assert.deepEqual(evidenceOf({ ...run, tampered: [], reward: null }), {
 *   evidence: {
 *     applied_cleanly: true,
 *     reason: "tests_failed",
 *     detail: null,
 *     tests: { passed: [], failed: ["t.py::test_b"] },
 *     tampered: [],
 *     exit_code: 1,
 *     log_tail: output,
 *   },
 *   missing: null,
 * });
 * ```
 * @throws {TypeError} for a Harbor run given no reward.
 */
export function evidenceOf(run: FinishedRun): RunEvidence {
  const { mode, task, result, tampered } = run;
  const report = parseTestOutput(result.stdout);
  const asked = (passed: boolean, rewardError: string | null) =>
    missingEvidence({
      mode,
      task,
      exitCode: result.exitCode,
      output: result.stdout,
      report,
      rewardError,
      passed,
    });
  if (mode === "harbor") {
    if (run.reward === null) {
      throw new TypeError("A Harbor run is judged by its reward: none given");
    }
    // The score is the reward file's, never the exit status: `reason` says whether it is > 0.
    const reward = run.reward;
    const none = "error" in reward;
    const reason = none ? "no_reward" : reward.reward > 0 ? "passed" : "tests_failed";
    return {
      evidence: {
        applied_cleanly: true,
        reason,
        detail: none ? reward.error : null,
        tests: report,
        tampered,
        exit_code: result.exitCode,
        log_tail: logTail(result.stdout),
        ...(none ? {} : { verifier: reward }),
      },
      missing: asked(reason === "passed", none ? reward.error : null),
    };
  }
  const { tests, passed } = namedTests(mode, task, report, result.exitCode);
  return {
    evidence: {
      applied_cleanly: true,
      reason: passed ? "passed" : "tests_failed",
      detail: null,
      tests,
      tampered,
      exit_code: result.exitCode,
      log_tail: logTail(result.stdout),
    },
    missing: asked(passed, null),
  };
}

/**
 * The tests of a run outside Harbor's mode as its mode names them, and whether it passed: a test
 * script's by their file name, test lists' by the lists (a test passed only when it never
 * failed); the run passes by its exit status, or in test lists' mode when every listed test did.
 */
function namedTests(
  mode: Exclude<GradingMode, "harbor">,
  task: Task,
  report: TestReport,
  exitCode: number | null,
): { tests: TestReport; passed: boolean } {
  if (mode === "f2p_script") {
    // pytest names the script by its path from the work tree; the file name is what tells.
    const short = (name: string) => name.replace(/^.*\/(?=[^/]*::)/, "");
    return {
      tests: { passed: report.passed.map(short), failed: report.failed.map(short) },
      passed: exitCode === 0,
    };
  }
  if (mode === "test_lists") {
    const ok = new Set(report.passed);
    const bad = new Set(report.failed);
    const listed = [...new Set([...task.fail_to_pass!, ...task.pass_to_pass])];
    const good = (test: string) => ok.has(test) && !bad.has(test);
    const tests = { passed: listed.filter(good), failed: listed.filter((test) => !good(test)) };
    return { tests, passed: tests.failed.length === 0 };
  }
  return { tests: report, passed: exitCode === 0 };
}
