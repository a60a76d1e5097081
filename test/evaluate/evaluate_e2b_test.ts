/**
 * Evaluations through the E2B backend: the real `e2b` SDK against the offline fake of E2B's
 * cloud, the fixture repositories bundled on the host and cloned in the sandbox.
 */
import assert from "node:assert/strict";
import { startFakeE2b } from "../../fixtures/fake_e2b.ts";
import { evaluate } from "../../lib/evaluate/mod.ts";
import { E2bBackend } from "../../lib/sandbox/mod.ts";
import { evaluateDeps, FIXTURES, fixtureTask } from "./_tasks.ts";

Deno.test("evaluate() through E2B: each fixture's gold patch scores 1 and its wrong patch 0", async () => {
  const dir = await Deno.makeTempDir({ prefix: "rg-eval-e2b-" });
  const fake = await startFakeE2b();
  const backend = new E2bBackend({
    ...fake.connection,
    template: "base",
    bootAttempts: 2,
    bootBackoffMs: 1,
    scratchDir: `${dir}/bundles`,
  });
  try {
    const deps = await evaluateDeps(backend, dir);
    for (const name of FIXTURES) {
      const fixture = await fixtureTask(name);
      const gold = await evaluate(deps, { task: fixture.task, patch: fixture.gold });
      assert.deepEqual(
        [gold.score, gold.reason, gold.applied_cleanly, gold.sandbox.backend],
        [1, "passed", true, "e2b"],
        `${name}: ${gold.log_tail}`,
      );
      assert.equal(gold.tests.failed.length, 0);
      assert.ok(gold.tests.passed.length >= 4, name);
      const wrong = await evaluate(deps, { task: fixture.task, patch: fixture.wrong });
      assert.deepEqual([wrong.score, wrong.reason], [0, "tests_failed"], name);
    }
    // Every evaluation sandbox had no internet and was killed afterwards.
    assert.equal(fake.creates.length, 2 * FIXTURES.length);
    for (const body of fake.creates as Record<string, unknown>[]) {
      assert.equal(body.allow_internet_access, false);
      assert.deepEqual(body.metadata, { purpose: "evaluate" });
    }
    assert.deepEqual(fake.live(), []);
    assert.equal(fake.deletes.length, 2 * FIXTURES.length);
  } finally {
    await backend.close();
    await fake.close();
    await Deno.remove(dir, { recursive: true });
  }
});
