/**
 * Task validation on the local backend (real bubblewrap, git, Debian's python3, pytest and
 * unittest, node): the shipped tasks and Harbor folders validate, broken ones are named, flaky
 * tests are found, the verdict is kept (one validation per task, however many ask) and bounded,
 * and a task whose tests only run once fixed is told from a broken one.
 */
import assert from "node:assert/strict";
import {
  evaluate,
  harborGold,
  keptVerdicts,
  MAX_VERDICT_BYTES,
  resolveHarborTask,
  storeBaseRuns,
  type Task,
  TaskSchema,
  type TaskValidation,
  type ValidateDeps,
  validateTask,
} from "../../lib/evaluate/mod.ts";
import { jsonBytes } from "../../lib/limits/mod.ts";
import { LocalBackend } from "../../lib/sandbox/mod.ts";
import { HARBOR_FIXTURES, harborFixture, harborGold as hostGold } from "./_harbor.ts";
import { counting, evaluateDeps, FIXTURES, fixtureTask, scratchRepo } from "./_tasks.ts";

const OPTIONS = { ttlMs: 600_000, holder: "test", leaseTtlMs: 5000, waitMs: 120_000 };

/** Validation deps on a local backend whose boots are counted, verdicts kept in memory KV. */
async function withDeps(
  fn: (deps: ValidateDeps, boots: () => number, dir: string) => Promise<void>,
): Promise<void> {
  const root = await Deno.makeTempDir({ prefix: "rg-validate-" });
  const local = new LocalBackend({ root: `${root}/sandboxes` });
  const kv = await Deno.openKv(":memory:");
  try {
    const { backend, boots } = counting(local);
    const deps = await evaluateDeps(backend, `${root}/cache`, {
      baseRuns: storeBaseRuns(kv, OPTIONS),
    });
    const validations = keptVerdicts<TaskValidation>(kv, "validation", OPTIONS);
    await fn({ ...deps, validations }, boots, root);
  } finally {
    kv.close();
    await local.close();
    await Deno.remove(root, { recursive: true });
  }
}

const request = (task: Task, patch: string | null) => ({
  task,
  gold: patch === null ? null : { patch, source: "request" as const },
});

Deno.test("every shipped fixture task validates with its gold patch: its tests run twice at base and twice fixed; a second ask is kept", async () => {
  await withDeps(async (deps, boots) => {
    for (const name of FIXTURES) {
      const { task, gold } = await fixtureTask(name);
      const before = boots();
      const { verdict, kept } = await validateTask(deps, request(task, gold));
      assert.deepEqual(
        [name, verdict.valid, verdict.problems, verdict.flaky, kept, boots() - before],
        [name, true, [], [], false, 4],
      );
      assert.deepEqual(verdict.base.map((run) => run.reason), ["tests_failed", "tests_failed"]);
      assert.deepEqual(verdict.gold?.map((run) => run.reason), ["passed", "passed"]);
      const again = await validateTask(deps, request(task, gold));
      assert.deepEqual([again.kept, again.verdict, boots() - before], [true, verdict, 4]);
    }
  });
});

Deno.test("a Harbor folder validates through its own solution/solve.sh, whose patch is what it makes on the host", async () => {
  await withDeps(async (deps, boots) => {
    for (const name of HARBOR_FIXTURES) {
      const harbor = harborFixture(name);
      const { task } = await resolveHarborTask({ harbor }, {
        cacheDir: deps.cacheDir,
        runsImages: false,
      });
      const gold = await harborGold(deps, task, harbor);
      assert.ok(gold, harbor);
      assert.deepEqual(await gold.make(), { patch: await hostGold(name) });
      const before = boots();
      const { verdict } = await validateTask(deps, { task, gold });
      assert.deepEqual(
        [verdict.valid, verdict.problems, verdict.gold_source, boots() - before],
        [true, [], "solution", 5], // the solution's sandbox, then 2 + 2 runs
      );
      assert.deepEqual(verdict.gold?.map((run) => run.reason), ["passed", "passed"]);
    }
  });
});

Deno.test("a mistyped test, swapped test lists, a gold patch that does not apply and tests that pass unfixed are each named", async () => {
  await withDeps(async (deps) => {
    const { task, gold, malformed } = await fixtureTask("python_unittest");
    const typo = TaskSchema.parse({
      ...task,
      fail_to_pass: [...task.fail_to_pass!, "tests.test_calc.TestCalc.test_mean_fractoin"],
    });
    const mistyped = (await validateTask(deps, request(typo, gold))).verdict;
    assert.equal(mistyped.valid, false);
    assert.deepEqual(mistyped.problems.map((problem) => problem.replace(/: .*/s, "")), [
      "at the base commit no test ran (no_tests_ran)",
      "with the gold patch no test ran (no_tests_ran)",
    ]);
    assert.match(mistyped.problems[0], /test_mean_fractoin \(unittest\.loader\._FailedTest/);

    const swapped = TaskSchema.parse({
      ...task,
      fail_to_pass: task.pass_to_pass,
      pass_to_pass: task.fail_to_pass,
    });
    assert.deepEqual((await validateTask(deps, request(swapped, gold))).verdict.problems, [
      "fail_to_pass tests pass at the base commit: tests.test_calc.TestCalc.test_add, " +
      "tests.test_calc.TestCalc.test_divide_by_zero, tests.test_calc.TestCalc.test_mean_empty",
      "pass_to_pass tests fail at the base commit: tests.test_calc.TestCalc.test_divide_fraction, " +
      "tests.test_calc.TestCalc.test_mean_fraction",
    ]);

    const broken = (await validateTask(deps, request(task, malformed))).verdict;
    assert.equal(broken.valid, false);
    assert.match(broken.problems[0], /^the gold patch does not apply: git apply: /);

    const unfixed = TaskSchema.parse({
      repo: task.repo,
      base_commit: task.base_commit,
      eval_cmd: "true",
    });
    assert.deepEqual((await validateTask(deps, request(unfixed, null))).verdict.problems, [
      "the tests pass at the base commit, with no change: every rollout would be rewarded",
    ]);
  });
});

Deno.test("a test whose outcome changes between two runs of the same tree is reported flaky, and the stable ones are not", async () => {
  await withDeps(async (deps, _boots, dir) => {
    const coins = Array.from({ length: 40 }, (_, i) => `test_coin_${i}`);
    const source = [
      "import os",
      "",
      "def test_stable_pass():",
      "    assert True",
      "",
      "def test_stable_fail():",
      "    assert False",
      "",
      ...coins.flatMap((name) => [`def ${name}():`, "    assert os.urandom(1)[0] < 128", ""]),
    ].join("\n");
    const repo = await scratchRepo(dir, { "tests/test_flip.py": source });
    const task = TaskSchema.parse({
      repo: repo.path,
      base_commit: repo.commit,
      eval_cmd: "python3 -m pytest -rA -p no:cacheprovider tests",
    });
    const { verdict } = await validateTask(deps, request(task, null));
    assert.equal(verdict.valid, false);
    assert.deepEqual(verdict.problems, []);
    // Forty coins all landing alike in both runs: one chance in 2^40.
    assert.ok(verdict.flaky.length > 0);
    const ids = coins.map((name) => `tests/test_flip.py::${name}`);
    assert.deepEqual(verdict.flaky.filter((id) => !ids.includes(id)), []);
    assert.equal(verdict.flaky.length, Math.min(20, verdict.flaky_count));
  });
});

Deno.test("a task whose new tests only import once fixed is valid, and a patch that leaves them unimportable then earns its zero", async () => {
  await withDeps(async (deps, boots, dir) => {
    const repo = await scratchRepo(dir, {
      "shapes.py": "def square(x):\n    return x * x\n",
      "tests/test_old.py":
        "from shapes import square\n\ndef test_square():\n    assert square(3) == 9\n",
      "tests/test_new.py": "from shapes import cube\n\ndef test_cube():\n    assert cube(2) == 8\n",
    });
    const task = TaskSchema.parse({
      repo: repo.path,
      base_commit: repo.commit,
      runner: "pytest",
      fail_to_pass: ["tests/test_new.py::test_cube"],
      pass_to_pass: ["tests/test_old.py::test_square"],
    });
    const gold = [
      "--- a/shapes.py",
      "+++ b/shapes.py",
      "@@ -2 +2,4 @@ def square(x):",
      "     return x * x",
      "+",
      "+def cube(x):",
      "+    return x * x * x",
      "",
    ].join("\n");
    const unrelated = [
      "--- a/shapes.py",
      "+++ b/shapes.py",
      "@@ -2 +2,2 @@ def square(x):",
      "     return x * x",
      "+# cube is left for later",
      "",
    ].join("\n");
    // Not validated: the base commit cannot collect the new tests either, so no score.
    const unproven = await evaluate(deps, { task, patch: unrelated });
    assert.deepEqual([unproven.score, unproven.reason], [null, "no_tests_ran"]);

    const { verdict } = await validateTask(deps, request(task, gold));
    assert.deepEqual([verdict.valid, verdict.problems], [true, []]);
    assert.deepEqual(verdict.base.map((run) => run.missing?.reason), [
      "no_tests_ran",
      "no_tests_ran",
    ]);
    const before = boots();
    const graded = await evaluate(deps, { task, patch: unrelated });
    assert.deepEqual([graded.score, graded.reason], [0, "tests_failed"]);
    assert.match(graded.detail!, /; with the task's gold patch they do: the task is not at fault$/);
    assert.equal(boots() - before, 1); // the base run is the one validation kept
  });
});

Deno.test("a verdict stays within one store value whatever its tests are called", async () => {
  await withDeps(async (deps, _boots, dir) => {
    // 300 tests with 900-character names of control characters and astral letters, each
    // passing or failing at random: every id flaky, every run's log full.
    const script = [
      "import os",
      "for i in range(300):",
      "    name = 'tests/t.py::' + ('\\u0001\\U0001F600' * 450) + str(i)",
      "    print(('PASSED ' if os.urandom(1)[0] < 128 else 'FAILED ') + name)",
      "raise SystemExit(1)",
    ].join("\n");
    const repo = await scratchRepo(dir, { "names.py": script });
    const task = TaskSchema.parse({
      repo: repo.path,
      base_commit: repo.commit,
      eval_cmd: "python3 names.py",
    });
    const { verdict } = await validateTask(deps, request(task, null));
    assert.equal(verdict.valid, false);
    assert.ok(verdict.flaky_count > 100, String(verdict.flaky_count));
    assert.ok(jsonBytes(verdict) <= MAX_VERDICT_BYTES, String(jsonBytes(verdict)));
    const again = await validateTask(deps, request(task, null));
    assert.deepEqual([again.kept, again.verdict], [true, verdict]);
  });
});
