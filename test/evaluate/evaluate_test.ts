/**
 * Evaluations on the local backend (real bubblewrap, real git, Debian's python3 and pytest,
 * node): the fixture tasks' gold, wrong and malformed patches, time limits, escapes, the
 * network, pre-commands and concurrency.
 */
import assert from "node:assert/strict";
import {
  evaluate,
  type EvaluationResult,
  FIXTURE_TASKS_DIR,
  TaskSchema,
  UnknownJudgerError,
} from "../../lib/evaluate/mod.ts";
import { countedBackend, LocalBackend, RepoError } from "../../lib/sandbox/mod.ts";
import { createMetrics } from "../../lib/metrics/mod.ts";
import { listDir, processesWith, waitFor } from "../_host.ts";
import { nonZero } from "../_prometheus.ts";
import { evaluateDeps, FIXTURES, fixtureTask, scratchRepo } from "./_tasks.ts";

/** A local backend in a fresh folder, removed with everything in it afterwards. */
async function withBackend(
  fn: (backend: LocalBackend, root: string) => Promise<void>,
): Promise<void> {
  const root = await Deno.makeTempDir({ prefix: "rg-eval-" });
  const backend = new LocalBackend({ root: `${root}/sandboxes` });
  try {
    await fn(backend, root);
  } finally {
    await backend.close();
    await Deno.remove(root, { recursive: true });
  }
}

/** What the fixture tasks' test runs name, per patch. */
const EXPECTED: Record<string, Record<"gold" | "wrong", { passed: string[]; failed: string[] }>> = {
  python_unittest: {
    gold: {
      passed: [
        "tests.test_calc.TestCalc.test_divide_fraction",
        "tests.test_calc.TestCalc.test_mean_fraction",
        "tests.test_calc.TestCalc.test_add",
        "tests.test_calc.TestCalc.test_divide_by_zero",
        "tests.test_calc.TestCalc.test_mean_empty",
      ],
      failed: [],
    },
    wrong: {
      passed: [
        "tests.test_calc.TestCalc.test_divide_fraction",
        "tests.test_calc.TestCalc.test_add",
        "tests.test_calc.TestCalc.test_divide_by_zero",
        "tests.test_calc.TestCalc.test_mean_empty",
      ],
      failed: ["tests.test_calc.TestCalc.test_mean_fraction"],
    },
  },
  python_pytest: {
    gold: {
      passed: [
        "test_f2p.py::test_short_text_is_unchanged",
        "test_f2p.py::test_result_fits_width",
        "test_f2p.py::test_custom_placeholder",
        "test_f2p.py::test_never_longer_than_width",
      ],
      failed: [],
    },
    wrong: {
      passed: [
        "test_f2p.py::test_short_text_is_unchanged",
        "test_f2p.py::test_result_fits_width",
        "test_f2p.py::test_custom_placeholder",
      ],
      failed: ["test_f2p.py::test_never_longer_than_width"],
    },
  },
  node_test: {
    gold: {
      passed: [
        "parses single pages",
        "expands ranges",
        "rejects reversed ranges",
        "allows spaces around items",
        "returns sorted pages without duplicates",
      ],
      failed: [],
    },
    wrong: {
      passed: [
        "parses single pages",
        "expands ranges",
        "rejects reversed ranges",
        "allows spaces around items",
      ],
      failed: ["returns sorted pages without duplicates"],
    },
  },
};

for (const name of FIXTURES) {
  Deno.test(`evaluate() ${name}: gold scores 1, wrong 0 naming the failing tests, malformed does not apply`, async () => {
    await withBackend(async (backend, root) => {
      const deps = await evaluateDeps(backend, root);
      const fixture = await fixtureTask(name);
      const gold = await evaluate(deps, { task: fixture.task, patch: fixture.gold });
      assert.equal(gold.score, 1, gold.log_tail);
      assert.equal(gold.reason, "passed");
      assert.equal(gold.applied_cleanly, true);
      assert.equal(gold.exit_code, 0);
      assert.deepEqual(gold.tests, EXPECTED[name].gold);

      const wrong = await evaluate(deps, { task: fixture.task, patch: fixture.wrong });
      assert.equal(wrong.score, 0);
      assert.equal(wrong.reason, "tests_failed");
      assert.equal(wrong.applied_cleanly, true);
      assert.notEqual(wrong.exit_code, 0);
      assert.deepEqual(wrong.tests, EXPECTED[name].wrong);
      for (const test of EXPECTED[name].wrong.failed) {
        assert.ok(wrong.log_tail.includes(test.split("::").pop()!), "the log shows the failure");
      }

      const malformed = await evaluate(deps, { task: fixture.task, patch: fixture.malformed });
      assert.equal(malformed.score, 0);
      assert.equal(malformed.applied_cleanly, false);
      assert.equal(malformed.reason, "patch_failed");
      assert.match(malformed.detail!, /^git apply: error: (patch failed|corrupt patch)/);
      assert.deepEqual(malformed.tests, { passed: [], failed: [] });

      assert.deepEqual(await listDir(`${root}/sandboxes`), [], "every sandbox was removed");
    });
  });
}

Deno.test("evaluate() kills a test that sleeps forever at the time limit and leaves nothing behind", async () => {
  await withBackend(async (backend, root) => {
    const marker = `rg_hang_${crypto.randomUUID().slice(0, 8)}`;
    const sleeper = `python3 -c "import time; time.sleep(1000)  # ${marker}"`;
    const repo = await scratchRepo(root, { "README.md": "hangs\n" });
    const task = TaskSchema.parse({
      repo: repo.path,
      base_commit: repo.commit,
      // A process tree: a background child and a foreground one, both asleep.
      eval_cmd: `${sleeper} & ${sleeper}; wait`,
      timeout_ms: 500,
    });
    const result = await evaluate(await evaluateDeps(backend, root), { task, patch: "" });
    assert.equal(result.score, 0);
    assert.equal(result.reason, "timeout");
    assert.equal(result.detail, "the tests ran past the time limit");
    assert.equal(result.exit_code, null);
    assert.deepEqual(await processesWith(marker), [], "no sandboxed process survives");
    assert.deepEqual(await listDir(`${root}/sandboxes`), [], "the work tree is removed");
  });
});

Deno.test("evaluate() rejects a patch writing ../outside without applying it", async () => {
  await withBackend(async (backend, root) => {
    const repo = await scratchRepo(root, { "a.txt": "a\n" });
    const task = TaskSchema.parse({ repo: repo.path, base_commit: repo.commit, eval_cmd: "true" });
    const patch = [
      "diff --git a/../outside b/../outside",
      "new file mode 100644",
      "--- /dev/null",
      "+++ b/../outside",
      "@@ -0,0 +1 @@",
      "+escaped",
      "",
    ].join("\n");
    const result = await evaluate(await evaluateDeps(backend, root), { task, patch });
    assert.deepEqual(
      [result.score, result.applied_cleanly, result.reason, result.detail, result.sandbox.id],
      [0, false, "patch_rejected", 'Patch touches "../outside", outside the repository', null],
    );
    assert.deepEqual(await listDir(`${root}/sandboxes`), []);
  });
});

Deno.test("evaluate() runs the tests with no network: a test that calls a local server cannot reach it", async () => {
  let requests = 0;
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, () => {
    requests++;
    return new Response("reached");
  });
  try {
    await withBackend(async (backend, root) => {
      const repo = await scratchRepo(root, {
        "test_net.py": [
          "import urllib.request",
          `body = urllib.request.urlopen("http://127.0.0.1:${server.addr.port}/", timeout=5).read()`,
          'print("REACHED", body)',
          "",
        ].join("\n"),
      });
      const task = TaskSchema.parse({
        repo: repo.path,
        base_commit: repo.commit,
        eval_cmd: "python3 test_net.py",
      });
      const result = await evaluate(await evaluateDeps(backend, root), { task, patch: "" });
      assert.equal(result.score, 0);
      assert.equal(result.exit_code, 1);
      assert.match(result.log_tail, /Connection refused|Network is unreachable/);
      assert.doesNotMatch(result.log_tail, /REACHED/);
    });
    assert.equal(requests, 0);
    // The same probe from the host does reach it, so the test above can fail.
    assert.equal(await (await fetch(`http://127.0.0.1:${server.addr.port}/`)).text(), "reached");
  } finally {
    await server.shutdown();
  }
});

Deno.test("evaluate() runs pre_commands before the patch, and reports one that fails", async () => {
  await withBackend(async (backend, root) => {
    const repo = await scratchRepo(root, { "README.md": "x\n" });
    // The patch edits a file only the pre-command creates: it applies only if that ran first.
    const patch = [
      "--- a/generated.txt",
      "+++ b/generated.txt",
      "@@ -1 +1 @@",
      "-one",
      "+two",
      "",
    ].join("\n");
    const deps = await evaluateDeps(backend, root);
    const task = TaskSchema.parse({
      repo: repo.path,
      base_commit: repo.commit,
      pre_commands: ["echo one > generated.txt", "test -f generated.txt"],
      eval_cmd: "grep -qx two generated.txt",
    });
    const ok = await evaluate(deps, { task, patch });
    assert.deepEqual([ok.score, ok.reason, ok.applied_cleanly], [1, "passed", true]);

    const broken = TaskSchema.parse({
      ...task,
      pre_commands: ["true", "echo setup broke; exit 3"],
    });
    const failed = await evaluate(deps, { task: broken, patch });
    // The task's fault, not the patch's: no score.
    assert.deepEqual(
      [failed.score, failed.reason, failed.applied_cleanly, failed.exit_code, failed.detail],
      [
        null,
        "pre_command_failed",
        false,
        3,
        "pre_commands[1] exited with 3: echo setup broke; exit 3",
      ],
    );
    assert.match(failed.log_tail, /setup broke/);
  });
});

Deno.test("evaluate() grades an empty patch: the base commit's tests", async () => {
  await withBackend(async (backend, root) => {
    const fixture = await fixtureTask("node_test");
    const result = await evaluate(await evaluateDeps(backend, root), {
      task: fixture.task,
      patch: "",
    });
    assert.deepEqual([result.score, result.reason, result.applied_cleanly], [
      0,
      "tests_failed",
      true,
    ]);
    assert.deepEqual(result.tests.failed, [
      "allows spaces around items",
      "returns sorted pages without duplicates",
    ]);
  });
});

Deno.test("ten evaluations at once on the local backend all finish with the right scores", async () => {
  await withBackend(async (backend, root) => {
    const deps = await evaluateDeps(backend, root);
    const fixtures = await Promise.all(FIXTURES.map(fixtureTask));
    const runs = Array.from({ length: 10 }, (_, i) => {
      const fixture = fixtures[i % fixtures.length];
      const kind = i % 2 === 0 ? "gold" : "wrong";
      return { kind, promise: evaluate(deps, { task: fixture.task, patch: fixture[kind] }) };
    });
    const results: EvaluationResult[] = await Promise.all(runs.map((run) => run.promise));
    assert.deepEqual(
      results.map((result) => result.score),
      runs.map((run) => (run.kind === "gold" ? 1 : 0)),
    );
    assert.equal(new Set(results.map((result) => result.sandbox.id)).size, 10, "ten sandboxes");
    assert.deepEqual(await listDir(`${root}/sandboxes`), []);
  });
});

Deno.test("evaluate() stops when its caller leaves: the sandbox is killed", async () => {
  await withBackend(async (backend, root) => {
    const marker = `rg_abort_${crypto.randomUUID().slice(0, 8)}`;
    const repo = await scratchRepo(root, { "README.md": "x\n" });
    const task = TaskSchema.parse({
      repo: repo.path,
      base_commit: repo.commit,
      eval_cmd: `python3 -c "import time; time.sleep(1000)  # ${marker}"`,
    });
    const controller = new AbortController();
    const running = evaluate(await evaluateDeps(backend, root), {
      task,
      patch: "",
      signal: controller.signal,
    });
    // Abort once the test command is running.
    await waitFor(async () => (await processesWith(marker)).length > 0, "the test to start");
    controller.abort(new DOMException("client left", "AbortError"));
    await assert.rejects(running, { name: "AbortError" });
    assert.deepEqual(await processesWith(marker), []);
    assert.deepEqual(await listDir(`${root}/sandboxes`), []);
  });
});

Deno.test("evaluate() refuses a repository that is not there and a judger that is not configured", async () => {
  await withBackend(async (backend, root) => {
    const deps = await evaluateDeps(backend, root);
    const missing = TaskSchema.parse({
      repo: `${root}/nope`,
      base_commit: "abc1234",
      eval_cmd: "true",
    });
    await assert.rejects(evaluate(deps, { task: missing, patch: "" }), (error: Error) => {
      assert.ok(error instanceof RepoError);
      assert.equal(
        error.message,
        `Repository "${root}/nope" is not a git repository on this machine`,
      );
      return true;
    });
    const repo = await scratchRepo(root, { "a.txt": "a\n" });
    const badCommit = TaskSchema.parse({
      repo: repo.path,
      base_commit: "0123456789abcdef",
      eval_cmd: "true",
    });
    await assert.rejects(evaluate(deps, { task: badCommit, patch: "" }), (error: Error) => {
      assert.ok(error instanceof RepoError);
      assert.match(error.message, /^Commit "0123456789abcdef" cannot be checked out from/);
      return true;
    });
    const judged = TaskSchema.parse({
      repo: repo.path,
      base_commit: repo.commit,
      eval_cmd: "true",
      judger: "llm",
    });
    await assert.rejects(evaluate(deps, { task: judged, patch: "" }), UnknownJudgerError);
    assert.deepEqual(await listDir(`${root}/sandboxes`), []);
  });
});

Deno.test("evaluate() puts protected paths back: a patch that edits the tests does not pass", async () => {
  await withBackend(async (backend, root) => {
    const deps = await evaluateDeps(backend, root);
    const fixture = await fixtureTask("python_unittest");
    const cheat = await Deno.readTextFile(`${FIXTURE_TASKS_DIR}python_unittest/cheat.patch`);
    assert.deepEqual(fixture.task.protected_paths, ["tests"]);
    const guarded = await evaluate(deps, { task: fixture.task, patch: cheat });
    assert.deepEqual(
      [guarded.score, guarded.reason, guarded.applied_cleanly, guarded.tampered],
      [0, "tests_failed", true, ["tests/test_calc.py"]],
    );
    assert.deepEqual(guarded.tests.failed, [
      "tests.test_calc.TestCalc.test_divide_fraction",
      "tests.test_calc.TestCalc.test_mean_fraction",
    ]);
    // Without protection the same patch passes: the guard is what stops it.
    const open = TaskSchema.parse({ ...fixture.task, protected_paths: [] });
    const unguarded = await evaluate(deps, { task: open, patch: cheat });
    assert.deepEqual([unguarded.score, unguarded.tampered], [1, []]);
    // The gold patch touches no protected path.
    const gold = await evaluate(deps, { task: fixture.task, patch: fixture.gold });
    assert.deepEqual([gold.score, gold.tampered], [1, []]);
  });
});

Deno.test("evaluate() applies the task's test_patch over the patch, replacing the agent's own version", async () => {
  await withBackend(async (backend, root) => {
    const repo = await scratchRepo(root, { "lib.sh": "answer() { echo 41; }\n" });
    const testPatch = [
      "diff --git a/check.sh b/check.sh",
      "new file mode 100644",
      "--- /dev/null",
      "+++ b/check.sh",
      "@@ -0,0 +1,2 @@",
      "+. ./lib.sh",
      '+test "$(answer)" = 42 && echo "ok 1 - answer is 42" || { echo "not ok 1 - answer is 42"; exit 1; }',
      "",
    ].join("\n");
    // The agent writes its own check.sh that always passes, and leaves the bug.
    const agentPatch = [
      "diff --git a/check.sh b/check.sh",
      "new file mode 100644",
      "--- /dev/null",
      "+++ b/check.sh",
      "@@ -0,0 +1 @@",
      '+echo "ok 1 - answer is 42"',
      "",
    ].join("\n");
    const fix = [
      "--- a/lib.sh",
      "+++ b/lib.sh",
      "@@ -1 +1 @@",
      "-answer() { echo 41; }",
      "+answer() { echo 42; }",
      "",
    ].join("\n");
    const task = TaskSchema.parse({
      repo: repo.path,
      base_commit: repo.commit,
      test_patch: testPatch,
      eval_cmd: "bash check.sh",
    });
    const deps = await evaluateDeps(backend, root);
    const cheat = await evaluate(deps, { task, patch: agentPatch });
    assert.deepEqual(
      [cheat.score, cheat.reason, cheat.tampered, cheat.tests],
      [0, "tests_failed", ["check.sh"], { passed: [], failed: ["answer is 42"] }],
    );
    const fixed = await evaluate(deps, { task, patch: fix });
    assert.deepEqual(
      [fixed.score, fixed.tampered, fixed.tests],
      [1, [], { passed: ["answer is 42"], failed: [] }],
    );
  });
});

Deno.test("evaluate() counts each evaluation by its evidence's reason, one that throws as error, and each boot", async () => {
  await withBackend(async (backend, root) => {
    const metrics = createMetrics();
    const deps = await evaluateDeps(countedBackend(backend, metrics), root, { metrics });
    const repo = await scratchRepo(root, { "a.txt": "a\n" });
    const task = (eval_cmd: string, extra: Record<string, unknown> = {}) =>
      TaskSchema.parse({ repo: repo.path, base_commit: repo.commit, eval_cmd, ...extra });
    assert.equal((await evaluate(deps, { task: task("true"), patch: "" })).reason, "passed");
    assert.equal((await evaluate(deps, { task: task("false"), patch: "" })).reason, "tests_failed");
    const escape = "--- /dev/null\n+++ b/../outside\n@@ -0,0 +1 @@\n+x\n";
    const rejected = await evaluate(deps, { task: task("true"), patch: escape });
    assert.equal(rejected.reason, "patch_rejected");
    const missing = TaskSchema.parse({
      repo: `${root}/nope`,
      base_commit: "abc1234",
      eval_cmd: "true",
    });
    await assert.rejects(evaluate(deps, { task: missing, patch: "" }), RepoError);
    // A judger that is not configured is a bad request: no evaluation ran.
    const judged = task("true", { judger: "llm" });
    await assert.rejects(evaluate(deps, { task: judged, patch: "" }), UnknownJudgerError);
    assert.deepEqual(nonZero(metrics), {
      'rollout_gateway_evaluations_total{outcome="passed"}': 1,
      'rollout_gateway_evaluations_total{outcome="tests_failed"}': 1,
      'rollout_gateway_evaluations_total{outcome="patch_rejected"}': 1,
      'rollout_gateway_evaluations_total{outcome="error"}': 1,
      'rollout_gateway_sandbox_boots_total{backend="local",outcome="ok"}': 2,
      'rollout_gateway_sandbox_boots_total{backend="local",outcome="bad_repo"}': 1,
      'rollout_gateway_sandbox_boot_seconds_count{backend="local"}': 3,
    });
  });
});
