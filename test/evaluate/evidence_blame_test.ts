/**
 * No reward without evidence, on the local backend (real bubblewrap, git, Debian's python3,
 * pytest and unittest): an evaluation whose tests never ran is the task's fault when they never
 * run at its base commit either (no score), and the patch's zero when they do; the base commit
 * is asked once per task, whatever the number of patches.
 */
import assert from "node:assert/strict";
import {
  evaluate,
  type EvaluateDeps,
  storeBaseRuns,
  type Task,
  TaskSchema,
} from "../../lib/evaluate/mod.ts";
import { LocalBackend } from "../../lib/sandbox/mod.ts";
import { counting, evaluateDeps, fixtureTask } from "./_tasks.ts";

/** Evaluation deps on a local backend whose boots are counted, base runs kept in memory KV. */
async function withDeps(
  fn: (deps: EvaluateDeps, boots: () => number) => Promise<void>,
): Promise<void> {
  const root = await Deno.makeTempDir({ prefix: "rg-blame-" });
  const local = new LocalBackend({ root: `${root}/sandboxes` });
  const kv = await Deno.openKv(":memory:");
  try {
    const { backend, boots } = counting(local);
    const baseRuns = storeBaseRuns(kv, {
      ttlMs: 60_000,
      holder: "test",
      leaseTtlMs: 5000,
      waitMs: 120_000,
    });
    await fn(await evaluateDeps(backend, `${root}/cache`, { baseRuns }), boots);
  } finally {
    kv.close();
    await local.close();
    await Deno.remove(root, { recursive: true });
  }
}

/** A patch appending `line` to the python_pytest fixture's textutil.py. */
const APPEND_TO_TEXTUTIL = (line: string) =>
  [
    "--- a/textutil.py",
    "+++ b/textutil.py",
    '@@ -20 +20,2 @@ def truncate(text, width, placeholder="..."):',
    "     return text[:width] + placeholder",
    `+${line}`,
    "",
  ].join("\n");

Deno.test("a runner that is not installed is the task's fault: runner_failed, no score; the base commit asked once for every patch", async () => {
  await withDeps(async (deps, boots) => {
    const { task, gold, wrong } = await fixtureTask("python_pytest");
    // The newcomer's machine: the task's test runner is not installed.
    const broken = TaskSchema.parse({
      ...task,
      f2p_cmd: "python3 -m pytest_not_installed {script}",
    });
    const detail = "the test runner is not installed: /usr/bin/python3: No module named " +
      "pytest_not_installed";

    const first = await evaluate(deps, { task: broken, patch: gold });
    assert.deepEqual(
      [first.score, first.reason, first.detail, first.base_run],
      [null, "runner_failed", `${detail} (at the base commit too)`, {
        reason: "tests_failed",
        detail,
      }],
    );
    assert.equal(boots(), 2, "the patched run and the base commit's");
    // Every other patch of the task: the base commit's verdict is kept.
    const second = await evaluate(deps, { task: broken, patch: wrong });
    assert.deepEqual([second.score, second.reason], [null, "runner_failed"]);
    assert.equal(boots(), 3);
    // No patch: the run is the base commit's own.
    const none = await evaluate(deps, { task: broken, patch: "" });
    assert.deepEqual(
      [none.score, none.reason, none.detail, none.base_run],
      [null, "runner_failed", detail, undefined],
    );
    assert.equal(boots(), 4);
    assert.match(none.log_tail, /No module named pytest_not_installed/);
  });
});

Deno.test("a patch with a syntax error is still the agent's zero: the tests run at the base commit", async () => {
  await withDeps(async (deps, boots) => {
    const { task } = await fixtureTask("python_pytest");
    const result = await evaluate(deps, { task, patch: APPEND_TO_TEXTUTIL("def broken(:") });
    assert.deepEqual(
      [result.score, result.reason, result.applied_cleanly, result.base_run],
      [0, "tests_failed", true, { reason: "tests_failed", detail: null }],
    );
    assert.match(
      result.detail!,
      /^No test ran with the patch \(the tests could not be collected: _+ ERROR collecting .*test_f2p\.py\); at the base commit they do \(tests_failed\): the patch stopped them$/,
    );
    assert.equal(boots(), 2);
  });
});

Deno.test("a test list with a mistyped test is the task's fault: no_tests_ran, and a fixed list is graded", async () => {
  await withDeps(async (deps) => {
    const { task, gold } = await fixtureTask("python_unittest");
    const typo = TaskSchema.parse({
      ...task,
      fail_to_pass: [...task.fail_to_pass!, "tests.test_calc.TestCalc.test_mean_fractoin"],
    });
    const result = await evaluate(deps, { task: typo, patch: gold });
    assert.deepEqual([result.score, result.reason], [null, "no_tests_ran"]);
    assert.match(
      result.detail!,
      /^the tests could not be collected: ERROR: test_mean_fractoin \(unittest\.loader\._FailedTest/,
    );
    assert.match(result.detail!, /\(at the base commit too\)$/);
    const fixed = await evaluate(deps, { task, patch: gold });
    assert.deepEqual([fixed.score, fixed.reason, fixed.base_run], [1, "passed", undefined]);
  });
});

Deno.test("a pass with no test run is no pass: a patch that empties the tests scores 0", async () => {
  await withDeps(async (deps) => {
    // Graded by unittest discovery, which exits 0 having found nothing.
    const { task } = await fixtureTask("python_unittest");
    const discover: Task = TaskSchema.parse({
      repo: task.repo,
      base_commit: task.base_commit,
      eval_cmd: "python3 -m unittest discover -s tests -t .",
    });
    const emptied = [
      "diff --git a/tests/test_calc.py b/tests/test_calc.py",
      "deleted file mode 100644",
      "--- a/tests/test_calc.py",
      "+++ /dev/null",
      ...(await Deno.readTextFile(
        new URL("../../fixtures/tasks/python_unittest/repo/tests/test_calc.py", import.meta.url),
      )).replace(/\n$/, "").split("\n").map((line, i, all) =>
        i === 0 ? `@@ -1,${all.length} +0,0 @@\n-${line}` : `-${line}`
      ),
      "",
    ].join("\n");
    const result = await evaluate(deps, { task: discover, patch: emptied });
    assert.deepEqual(
      [result.score, result.reason, result.exit_code, result.base_run],
      [0, "tests_failed", 0, { reason: "tests_failed", detail: null }],
    );
    assert.match(
      result.detail!,
      /^No test ran with the patch \(the runner ran no test: Ran 0 tests/,
    );
  });
});
