/**
 * What counts as evidence that a task's tests ran, read from what the real runners print here:
 * Debian's python3 and pytest, unittest, node's test runner, dash and bash. Each rule is met by
 * the runner's own output for the fault it names, and a real failing test meets none.
 */
import assert from "node:assert/strict";
import {
  EVIDENCE_RULES,
  missingEvidence,
  parseTestOutput,
  type Task,
  TaskSchema,
  type TestRun,
} from "../../lib/evaluate/mod.ts";

/** Runs `script` with `sh` in a folder holding `files`; its exit status and interleaved output. */
async function produced(
  files: Record<string, string>,
  script: string,
): Promise<{ exitCode: number; output: string }> {
  const dir = await Deno.makeTempDir({ prefix: "rg-evidence-" });
  try {
    for (const [path, text] of Object.entries(files)) {
      await Deno.mkdir(`${dir}/${path}`.replace(/\/[^/]*$/, ""), { recursive: true });
      await Deno.writeTextFile(`${dir}/${path}`, text);
    }
    const { code, stdout } = await new Deno.Command("sh", {
      args: ["-c", `exec 2>&1; ${script}`],
      cwd: dir,
      env: { PATH: "/usr/bin:/bin", HOME: dir },
      clearEnv: true,
    }).output();
    return { exitCode: code, output: new TextDecoder().decode(stdout) };
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

const evalTask = TaskSchema.parse({ repo: "/r", base_commit: "HEAD", eval_cmd: "true" });

/** The run of `eval_cmd` mode (unless `task` says) that `script` makes. */
async function runOf(
  files: Record<string, string>,
  script: string,
  task: Task = evalTask,
): Promise<TestRun> {
  const { exitCode, output } = await produced(files, script);
  const mode = task.fail_to_pass ? "test_lists" : task.f2p_script ? "f2p_script" : "eval_cmd";
  return {
    mode,
    task,
    exitCode,
    output,
    report: parseTestOutput(output),
    rewardError: null,
    passed: exitCode === 0,
  };
}

const FAILING_UNITTEST = "import unittest\nclass T(unittest.TestCase):\n" +
  "    def test_a(self):\n        self.assertEqual(1, 2)\n";
const FAILING_PYTEST = "def test_a():\n    assert 1 == 2\n";

Deno.test("a runner that is not installed, a command not found or not executable: runner_failed", async () => {
  const cases: [string, Record<string, string>, string, RegExp][] = [
    [
      "python3 -m with no such module",
      {},
      "/usr/bin/python3 -m pytest_not_installed -rA tests",
      /^the test runner is not installed: \/usr\/bin\/python3: No module named pytest_not_installed$/,
    ],
    [
      "dash: a command not found",
      {},
      "rg_no_such_runner --all",
      /^the test command exited 127 \(not found\): \/usr\/bin\/sh: 1: rg_no_such_runner: not found$/,
    ],
    [
      "bash running the command: a command not found, the next one run",
      {},
      "bash -c '{ rg_no_such_runner --all\n echo done; exit 1\n}'",
      /^a command the tests need is missing: bash: line 1: rg_no_such_runner: command not found$/,
    ],
    [
      "a test script that is not executable",
      { "run_tests": "#!/bin/sh\necho ok\n" },
      "./run_tests",
      /^the test command exited 126 \(not executable\): .*Permission denied$/,
    ],
  ];
  for (const [name, files, script, detail] of cases) {
    const missing = missingEvidence(await runOf(files, script));
    assert.equal(missing?.reason, "runner_failed", `${name}: ${JSON.stringify(missing)}`);
    assert.match(missing!.detail, detail, name);
  }
});

Deno.test("tests that cannot be collected, a path that names none, a runner that ran none: no_tests_ran", async () => {
  const tests = { "tests/__init__.py": "", "tests/test_x.py": FAILING_UNITTEST };
  const cases: [string, Record<string, string>, string, RegExp][] = [
    [
      "pytest: a syntax error in a test module",
      { "test_bad.py": "def f(:\n" },
      "/usr/bin/python3 -m pytest -rA test_bad.py",
      /^the tests could not be collected: _+ ERROR collecting test_bad\.py$/,
    ],
    [
      "pytest: a path that is not there",
      {},
      "/usr/bin/python3 -m pytest -rA tests/test_nope.py",
      /^the runner found no such test: ERROR: file or directory not found: tests\/test_nope\.py$/,
    ],
    [
      "pytest: a test id that is not there",
      { "test_x.py": FAILING_PYTEST },
      "/usr/bin/python3 -m pytest -rA test_x.py::test_nope",
      /^the runner found no such test: ERROR: not found: .*test_x\.py::test_nope$/,
    ],
    [
      "pytest: a module with no test",
      { "test_x.py": "x = 1\n" },
      "/usr/bin/python3 -m pytest -rA test_x.py",
      /^the runner ran no test: =+ no tests ran in [\d.]+s =+$/,
    ],
    [
      "unittest: a module that is not there",
      tests,
      "/usr/bin/python3 -m unittest -v tests.test_nope",
      /^the tests could not be collected: ERROR: test_nope \(unittest\.loader\._FailedTest\.test_nope\)$/,
    ],
    [
      "unittest: a method that is not there",
      tests,
      "/usr/bin/python3 -m unittest -v tests.test_x.T.test_nope",
      /^the tests could not be collected: ERROR: test_nope \(unittest\.loader\._FailedTest/,
    ],
    [
      "unittest: discovery that finds nothing",
      { "empty/README": "" },
      "/usr/bin/python3 -m unittest discover -s empty",
      /^the runner ran no test: Ran 0 tests in [\d.]+s$/,
    ],
    [
      "node: a path that is not there",
      {},
      "node --test --test-reporter=tap nothing_here/",
      /^the runner found no such test: Could not find '.*\/nothing_here'$/,
    ],
    [
      "node: a folder with no test file",
      { "tests/README": "" },
      "node --test --test-reporter=tap tests/",
      /^the runner ran no test: # tests 0$/,
    ],
  ];
  for (const [name, files, script, detail] of cases) {
    // Held to these even when it passed (unittest 3.11 exits 0 having run nothing).
    const run = await runOf(files, script);
    const missing = missingEvidence(run);
    assert.equal(missing?.reason, "no_tests_ran", `${name}: ${run.output}`);
    assert.match(missing!.detail, detail, name);
  }
});

Deno.test("a real failing test, in each runner, is evidence that the tests ran", async () => {
  const cases: [string, Record<string, string>, string][] = [
    [
      "unittest",
      { "tests/__init__.py": "", "tests/test_x.py": FAILING_UNITTEST },
      "/usr/bin/python3 -m unittest -v tests.test_x",
    ],
    ["pytest", { "test_x.py": FAILING_PYTEST }, "/usr/bin/python3 -m pytest -rA test_x.py"],
    [
      "node",
      {
        "x.test.mjs": 'import test from "node:test";\nimport assert from "node:assert";\n' +
          'test("a", () => assert.equal(1, 2));\n',
      },
      "node --test --test-reporter=tap x.test.mjs",
    ],
    // A test that fails with an import error of the code under test is a failing test.
    ["pytest import error in a test", {
      "test_x.py": "def test_a():\n    import module_the_fix_adds\n",
    }, "/usr/bin/python3 -m pytest -rA test_x.py"],
  ];
  for (const [name, files, script] of cases) {
    const run = await runOf(files, script);
    assert.notEqual(run.exitCode, 0, name);
    assert.equal(missingEvidence(run), null, `${name}: ${run.output}`);
  }
});

Deno.test("mode rules: a listed test the runner never named, a test script that reported none, a verifier without a reward", async () => {
  const listed = TaskSchema.parse({
    repo: "/r",
    base_commit: "HEAD",
    runner: "pytest",
    fail_to_pass: ["test_x.py::test_a", "test_x.py::test_typo"],
  });
  const partial = await runOf(
    { "test_x.py": FAILING_PYTEST },
    "/usr/bin/python3 -m pytest -rA test_x.py",
    listed,
  );
  assert.deepEqual(missingEvidence(partial), {
    reason: "no_tests_ran",
    detail: "1 of the 2 listed tests never ran: test_x.py::test_typo",
  });

  const script = TaskSchema.parse({
    repo: "/r",
    base_commit: "HEAD",
    f2p_script: "print('checked')\n",
    f2p_filename: "check.py",
  });
  const quiet = await runOf(
    { "check.py": "print('checked')\nraise SystemExit(1)\n" },
    "/usr/bin/python3 check.py",
    script,
  );
  assert.deepEqual(missingEvidence(quiet), {
    reason: "no_tests_ran",
    detail: "the test script reported no test",
  });
  // The same script run by a command of the task's own: its output is its own business.
  const own = { ...quiet, task: { ...script, f2p_cmd: "python3 {script}" } };
  assert.equal(missingEvidence(own), null);

  const harbor = { ...quiet, mode: "harbor" as const, rewardError: "test.sh wrote no reward" };
  assert.deepEqual(missingEvidence(harbor), {
    reason: "no_tests_ran",
    detail: "the verifier wrote no reward: test.sh wrote no reward",
  });
});

Deno.test("the evidence table in docs/rollouts.md is EVIDENCE_RULES", async () => {
  const doc = await Deno.readTextFile(new URL("../../docs/rollouts.md", import.meta.url));
  const section = doc.indexOf("### No reward without evidence");
  const start = doc.indexOf("| reason ", section);
  assert.ok(section >= 0 && start >= 0, "docs/rollouts.md has the evidence table");
  const rows = doc.slice(start).split("\n\n")[0].split("\n").slice(2).map((line) =>
    line.split("|").slice(1, -1).map((cell) => cell.trim())
  );
  assert.deepEqual(
    rows,
    EVIDENCE_RULES.map((rule) => [
      `\`${rule.reason}\``,
      rule.modes === "all" ? "all" : rule.modes.map((mode) => `\`${mode}\``).join(", "),
      rule.onPass ? "yes" : "no",
      rule.meaning,
    ]),
  );
});
