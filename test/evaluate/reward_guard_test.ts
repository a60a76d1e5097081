/**
 * Rewards a patch cannot game: a module that shadows a protected test, hidden from git by a
 * `.gitignore` the patch adds, is removed and reported — on the local backend, through
 * `POST /evaluate`, and in a rollout whose agent plants it.
 */
import assert from "node:assert/strict";
import { evaluate, FIXTURE_TASKS_DIR, TaskSchema } from "../../lib/evaluate/mod.ts";
import { LocalBackend } from "../../lib/sandbox/mod.ts";
import { ADMIN_HEADERS, startGateway } from "../_gateway.ts";
import { awaitJob, oneCommand, submit } from "../rollout/_rollout.ts";
import { evaluateDeps, fixtureTask } from "./_tasks.ts";

/** The package `tests/test_calc/` shadows `tests/test_calc.py`, and `.gitignore` hides it. */
const SHADOW_FILE = "tests/test_calc/__init__.py";
const shadowPatch = () => Deno.readTextFile(`${FIXTURE_TASKS_DIR}python_unittest/shadow.patch`);

Deno.test("evaluate() removes a shadowing module that a .gitignore hides under a protected path", async () => {
  const root = await Deno.makeTempDir({ prefix: "rg-guard-" });
  const backend = new LocalBackend({ root: `${root}/sandboxes` });
  try {
    const deps = await evaluateDeps(backend, root);
    const { task } = await fixtureTask("python_unittest");
    const patch = await shadowPatch();
    const guarded = await evaluate(deps, { task, patch });
    assert.deepEqual(
      [guarded.score, guarded.reason, guarded.applied_cleanly, guarded.tampered],
      [0, "tests_failed", true, [SHADOW_FILE]],
    );
    assert.deepEqual(guarded.tests.failed, [
      "tests.test_calc.TestCalc.test_divide_fraction",
      "tests.test_calc.TestCalc.test_mean_fraction",
    ]);
    // Unguarded, the same patch passes every test: the guard is what stops it.
    const open = TaskSchema.parse({ ...task, protected_paths: [] });
    const unguarded = await evaluate(deps, { task: open, patch });
    assert.deepEqual([unguarded.score, unguarded.tampered], [1, []]);
  } finally {
    await backend.close();
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("POST /evaluate grades the shadowing patch 0 and lists the hidden files as tampered", async () => {
  const gw = await startGateway();
  try {
    const response = await fetch(`${gw.url}/evaluate`, {
      method: "POST",
      headers: ADMIN_HEADERS,
      body: JSON.stringify({
        task: (await fixtureTask("python_unittest")).task,
        patch: await shadowPatch(),
      }),
    });
    const body = await response.json();
    assert.equal(response.status, 200, JSON.stringify(body));
    assert.deepEqual([body.score, body.reason, body.tampered], [0, "tests_failed", [SHADOW_FILE]]);
  } finally {
    await gw.close();
  }
});

/** What the agent runs: the shadowing package, a .gitignore hiding it, both forced into git. */
const PLANT_SHADOW = [
  "mkdir -p tests/test_calc",
  `printf 'import unittest\\n\\n\\nclass TestCalc(unittest.TestCase):\\n    def test_divide_fraction(self):\\n        pass\\n\\n    def test_mean_fraction(self):\\n        pass\\n' > ${SHADOW_FILE}`,
  "printf 'tests/test_calc/\\n' > .gitignore",
  "git add -f .gitignore tests/test_calc",
].join(" && ");

Deno.test("a rollout whose agent plants a git-ignored shadowing module gets reward 0, the module reported", async () => {
  const gw = await startGateway({ script: oneCommand(PLANT_SHADOW), worker: true });
  try {
    const { task } = await fixtureTask("python_unittest");
    const view = await awaitJob(gw, (await submit(gw, { task })).jobs[0].id);
    assert.equal(view.phase, "done", JSON.stringify(view));
    assert.ok(view.result.patch.includes(`+++ b/${SHADOW_FILE}`), view.result.patch);
    assert.deepEqual(
      [view.result.reward.score, view.result.reward.tampered],
      [0, [SHADOW_FILE]],
    );
    assert.equal(view.result.samples.samples[0].reward, 0);
  } finally {
    await gw.close();
  }
});
