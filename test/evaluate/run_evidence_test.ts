/**
 * The judging stage of grading on its own: a finished run of the test command, as each grading
 * mode names its tests and decides whether it passed, judged into evidence and what it lacks. No
 * sandbox: the runs are the outputs the real runners print.
 */
import assert from "node:assert/strict";
import { evidenceOf, type FinishedRun, type Task, TaskSchema } from "../../lib/evaluate/mod.ts";

const base = { repo: "/r", base_commit: "HEAD" };

/** The finished run of `task` in `mode`: `exitCode` and `stdout`, nothing tampered, no reward. */
function finished(
  mode: FinishedRun["mode"],
  task: Task,
  exitCode: number | null,
  stdout: string,
): FinishedRun {
  return { mode, task, result: { exitCode, stdout }, tampered: [], reward: null };
}

Deno.test("evidenceOf() passes eval_cmd by its exit status and names every test its output reports", () => {
  const task = TaskSchema.parse({ ...base, eval_cmd: "python3 -m pytest -rA" });
  const output = "PASSED t.py::test_a\nFAILED t.py::test_b - assert 1 == 2\n";
  assert.deepEqual(evidenceOf({ ...finished("eval_cmd", task, 0, output), tampered: ["t.py"] }), {
    evidence: {
      applied_cleanly: true,
      reason: "passed",
      detail: null,
      tests: { passed: ["t.py::test_a"], failed: ["t.py::test_b"] },
      tampered: ["t.py"],
      exit_code: 0,
      log_tail: output,
    },
    missing: null,
  });
  assert.deepEqual(
    evidenceOf(finished("eval_cmd", task, 1, output)).evidence.reason,
    "tests_failed",
  );
});

Deno.test("evidenceOf() keeps the reason of a run in which no test ran, and says what it lacks", () => {
  const task = TaskSchema.parse({ ...base, eval_cmd: "python3 -m unittest" });
  const output = "\n----------------------------------------------------------------------\n" +
    "Ran 0 tests in 0.000s\n\nNO TESTS RAN\n";
  assert.deepEqual(evidenceOf(finished("eval_cmd", task, 5, output)), {
    evidence: {
      applied_cleanly: true,
      reason: "tests_failed",
      detail: null,
      tests: { passed: [], failed: [] },
      tampered: [],
      exit_code: 5,
      log_tail: output,
    },
    missing: { reason: "no_tests_ran", detail: "the runner ran no test: Ran 0 tests in 0.000s" },
  });
});

Deno.test("evidenceOf() names a test script's tests by its file name, not its path in the work tree", () => {
  const task = TaskSchema.parse({ ...base, f2p_script: "def test_a(): pass\n" });
  const output = "PASSED ../tmp/rollout_eval/test_f2p.py::test_a\n" +
    "FAILED ../tmp/rollout_eval/test_f2p.py::test_b - x\n";
  assert.deepEqual(evidenceOf(finished("f2p_script", task, 1, output)), {
    evidence: {
      applied_cleanly: true,
      reason: "tests_failed",
      detail: null,
      tests: { passed: ["test_f2p.py::test_a"], failed: ["test_f2p.py::test_b"] },
      tampered: [],
      exit_code: 1,
      log_tail: output,
    },
    missing: null,
  });
});

Deno.test("evidenceOf() judges test lists by the listed tests alone, whatever the exit status", () => {
  const task = TaskSchema.parse({
    ...base,
    runner: "pytest",
    fail_to_pass: ["t.py::test_fix"],
    pass_to_pass: ["t.py::test_old", "t.py::test_fix"],
  });
  // An unlisted test failing sets the exit status; the listed ones all passed.
  const output = "PASSED t.py::test_fix\nPASSED t.py::test_old\nFAILED t.py::test_other - x\n";
  assert.deepEqual(evidenceOf(finished("test_lists", task, 1, output)), {
    evidence: {
      applied_cleanly: true,
      reason: "passed",
      detail: null,
      tests: { passed: ["t.py::test_fix", "t.py::test_old"], failed: [] },
      tampered: [],
      exit_code: 1,
      log_tail: output,
    },
    missing: null,
  });
  // A listed test that failed once, or never ran, failed; the one missing is what the run lacks.
  const partial = "PASSED t.py::test_fix\nFAILED t.py::test_fix - flaky\n";
  assert.deepEqual(evidenceOf(finished("test_lists", task, 0, partial)), {
    evidence: {
      applied_cleanly: true,
      reason: "tests_failed",
      detail: null,
      tests: { passed: [], failed: ["t.py::test_fix", "t.py::test_old"] },
      tampered: [],
      exit_code: 0,
      log_tail: partial,
    },
    missing: {
      reason: "no_tests_ran",
      detail: "1 of the 2 listed tests never ran: t.py::test_old",
    },
  });
});

const harborTask = TaskSchema.parse({
  ...base,
  harbor_tests: [{ path: "test.sh", base64: btoa("exit 0\n"), executable: true }],
});

Deno.test("evidenceOf() scores a Harbor run by its verifier's reward, never by its exit status", () => {
  const reward = { file: "reward.txt" as const, reward: 1, metrics: {} };
  const run = { ...finished("harbor", harborTask, 1, "verifier done\n"), reward };
  assert.deepEqual(evidenceOf(run), {
    evidence: {
      applied_cleanly: true,
      reason: "passed",
      detail: null,
      tests: { passed: [], failed: [] },
      tampered: [],
      exit_code: 1,
      log_tail: "verifier done\n",
      verifier: reward,
    },
    missing: null,
  });
  const zero = { ...reward, reward: 0 };
  assert.deepEqual(evidenceOf({ ...run, result: { exitCode: 0, stdout: "" }, reward: zero }), {
    evidence: {
      applied_cleanly: true,
      reason: "tests_failed",
      detail: null,
      tests: { passed: [], failed: [] },
      tampered: [],
      exit_code: 0,
      log_tail: "",
      verifier: zero,
    },
    missing: null,
  });
});

Deno.test("evidenceOf() gives a Harbor run without a reward no_reward, lacking the reward", () => {
  const error = "test.sh wrote no reward";
  const run = { ...finished("harbor", harborTask, 0, ""), reward: { error } };
  assert.deepEqual(evidenceOf(run), {
    evidence: {
      applied_cleanly: true,
      reason: "no_reward",
      detail: error,
      tests: { passed: [], failed: [] },
      tampered: [],
      exit_code: 0,
      log_tail: "",
    },
    missing: { reason: "no_tests_ran", detail: `the verifier wrote no reward: ${error}` },
  });
  assert.throws(
    () => evidenceOf(finished("harbor", harborTask, 0, "")),
    new TypeError("A Harbor run is judged by its reward: none given"),
  );
});
