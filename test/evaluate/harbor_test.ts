/**
 * Harbor task folders: the loader on the fixtures and on every kind of broken folder, the
 * resolved task spec per backend, the reward files' parsing, and grading on the local backend
 * (real bubblewrap): the gold patch scores 1, no patch 0, a verifier that writes no reward 0.
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import {
  evaluate,
  HarborRefSchema,
  HarborTaskError,
  inspectHarborTask,
  loadHarborTask,
  MAX_HARBOR_TEST_FILE_BYTES,
  MAX_HARBOR_TEST_FILES,
  MAX_TASK_TOML_BYTES,
  parseHarborReward,
  resolveHarborTask,
  type Task,
  TaskSchema,
} from "../../lib/evaluate/mod.ts";
import { MAX_TREE_DEPTH, MAX_TREE_FOLDERS } from "../../lib/evaluate/_tree.ts";
import { LocalBackend } from "../../lib/sandbox/mod.ts";
import { copyFixture, harborFixture, harborGold } from "./_harbor.ts";
import { evaluateDeps, scratchRepo } from "./_tasks.ts";

/** Runs `fn` with a scratch folder, removed afterwards. */
async function withDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "rg-harbor-" }));
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("loadHarborTask() reads a task folder: task.toml's facts, the instruction, the tests, the work tree", async () => {
  const task = await loadHarborTask(harborFixture("fizzbuzz"));
  assert.deepEqual(
    { ...task, instruction: null, tests: null, environment: null },
    {
      name: "rollout-gateway/fizzbuzz",
      path: harborFixture("fizzbuzz"),
      description: "Fix the FizzBuzz module so that multiples of 15 print FizzBuzz.",
      difficulty: "easy",
      category: "programming",
      tags: ["python", "fixture"],
      agentTimeoutSec: 120,
      verifierTimeoutSec: 60,
      dockerImage: "rollout-gateway/harbor-fizzbuzz",
      workdir: "/app",
      verifierEnv: { FIZZBUZZ_LIMIT: "30" },
      instruction: null,
      tests: null,
      environment: null,
    },
  );
  assert.match(task.instruction, /^`fizzbuzz\.py` in \/app prints/);
  assert.deepEqual(task.tests.map((file) => [file.path, file.executable]), [
    ["test.sh", true],
    ["test_outputs.py", false],
  ]);
  const testSh = await Deno.readTextFile(`${harborFixture("fizzbuzz")}/tests/test.sh`);
  assert.equal(Buffer.from(task.tests[0].base64, "base64").toString(), testSh);
  // The Dockerfile builds an image; it is no file of the work tree.
  assert.deepEqual(task.environment.map((file) => file.path), ["fizzbuzz.py"]);

  const facts = await inspectHarborTask(harborFixture("word_count"));
  assert.deepEqual(
    [facts.name, facts.agentTimeoutSec, facts.verifierTimeoutSec, facts.dockerImage],
    ["rollout-gateway/word-count", 90, 30, null],
  );
  assert.equal(facts.workdir, "/app", "Harbor's default work dir");
});

Deno.test("resolveHarborTask() makes a task spec: environment/ as a git repository locally, the image on E2B", async () => {
  await withDir(async (dir) => {
    const local = await resolveHarborTask({ harbor: harborFixture("fizzbuzz") }, {
      cacheDir: `${dir}/a`,
      runsImages: false,
    });
    const { task } = local;
    assert.equal(local.agentTimeoutMs, 120_000);
    assert.match(task.repo!, new RegExp(`^${dir}/a/harbor/[0-9a-f]{32}$`));
    assert.match(task.base_commit, /^[0-9a-f]{40}$/);
    assert.deepEqual(
      [task.template, task.workdir_alias, task.timeout_ms, task.env, task.metadata],
      [
        "rollout-gateway/harbor-fizzbuzz",
        "/app",
        60_000,
        { FIZZBUZZ_LIMIT: "30" },
        { harbor_task: "rollout-gateway/fizzbuzz" },
      ],
    );
    assert.match(task.problem_statement, /FizzBuzz/);
    assert.deepEqual(task.harbor_tests!.map((file) => file.path), ["test.sh", "test_outputs.py"]);
    assert.deepEqual(TaskSchema.parse(task), task, "the resolved task is a valid task spec");

    // The same files make the same commit, in another cache too.
    const again = await resolveHarborTask({ harbor: harborFixture("fizzbuzz") }, {
      cacheDir: `${dir}/b`,
      runsImages: false,
    });
    assert.equal(again.task.base_commit, task.base_commit);

    const e2b = await resolveHarborTask({ harbor: harborFixture("fizzbuzz") }, {
      cacheDir: `${dir}/a`,
      runsImages: true,
    });
    assert.deepEqual(
      [e2b.task.repo, e2b.task.repo_dir, e2b.task.base_commit, e2b.task.workdir_alias],
      [undefined, "/app", "HEAD", undefined],
    );
    // Without an image, E2B gets the environment/ repository too.
    const noImage = await resolveHarborTask({ harbor: harborFixture("word_count") }, {
      cacheDir: `${dir}/a`,
      runsImages: true,
    });
    assert.match(noImage.task.repo!, /\/harbor\/[0-9a-f]{32}$/);
    assert.equal(noImage.task.template, undefined);

    const repo = await scratchRepo(dir, { "count.mjs": "export {};\n" });
    const given = await resolveHarborTask(
      { harbor: harborFixture("word_count"), repo: repo.path, base_commit: repo.commit },
      { cacheDir: `${dir}/a`, runsImages: false },
    );
    assert.deepEqual([given.task.repo, given.task.base_commit], [repo.path, repo.commit]);
  });
});

Deno.test("HarborRefSchema takes an absolute folder, with repo and base_commit only together", () => {
  assert.ok(HarborRefSchema.safeParse({ harbor: "/srv/tasks/hello" }).success);
  const problems = (value: unknown) => {
    const parsed = HarborRefSchema.safeParse(value);
    return parsed.success
      ? []
      : parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`);
  };
  assert.match(problems({ harbor: "tasks/hello" })[0], /^harbor: expected an absolute path/);
  assert.match(problems({ harbor: "/srv/../etc" })[0], /^harbor: expected a path without/);
  assert.match(problems({ harbor: "/t", repo: "/r" })[0], /^base_commit: give repo and/);
  assert.match(problems({ harbor: "/t", eval_cmd: "true" })[0], /eval_cmd/);
  assert.match(problems({ harbor: `/${"a".repeat(5000)}` })[0], /^harbor: /);
});

/** One broken copy of a fixture per case: what is done to it, and the error it must give. */
const BROKEN: [string, (dir: string) => Promise<void>, RegExp][] = [
  ["no task.toml", (d) => Deno.remove(`${d}/task.toml`), /has no task\.toml$/],
  [
    "task.toml that is not TOML",
    (d) => Deno.writeTextFile(`${d}/task.toml`, '[task]\nname = "x"\ntimeout = \n'),
    /task\.toml is not valid TOML at line 3, column \d+: /,
  ],
  [
    "a field of the wrong type",
    (d) => Deno.writeTextFile(`${d}/task.toml`, '[agent]\ntimeout_sec = "long"\n'),
    /task\.toml: \[agent\] timeout_sec: /,
  ],
  [
    "task.toml too large",
    (d) => Deno.writeTextFile(`${d}/task.toml`, `# ${"x".repeat(MAX_TASK_TOML_BYTES)}\n`),
    new RegExp(`task\\.toml has \\d+ bytes, at most ${MAX_TASK_TOML_BYTES}`),
  ],
  ["no instruction.md", (d) => Deno.remove(`${d}/instruction.md`), /has no instruction\.md$/],
  [
    "an instruction that is not UTF-8",
    (d) => Deno.writeFile(`${d}/instruction.md`, new Uint8Array([0xff, 0xfe, 0x41])),
    /instruction\.md is not UTF-8 text/,
  ],
  ["no tests/test.sh", (d) => Deno.remove(`${d}/tests/test.sh`), /has no tests\/test\.sh$/],
  [
    "an instruction linking out of the folder",
    async (d) => {
      await Deno.remove(`${d}/instruction.md`);
      await Deno.symlink("/etc/hostname", `${d}/instruction.md`);
    },
    /instruction\.md is a symbolic link out of the task folder/,
  ],
  [
    "a test file linking out of the folder",
    (d) => Deno.symlink("/etc/hostname", `${d}/tests/secret.txt`),
    /tests\/secret\.txt is a symbolic link out of the task folder/,
  ],
  [
    "a test file too large",
    (d) => Deno.writeFile(`${d}/tests/big.bin`, new Uint8Array(MAX_HARBOR_TEST_FILE_BYTES + 1)),
    new RegExp(`tests/big\\.bin has \\d+ bytes, at most ${MAX_HARBOR_TEST_FILE_BYTES}`),
  ],
  [
    "too many test files",
    async (d) => {
      for (let i = 0; i < MAX_HARBOR_TEST_FILES; i++) {
        await Deno.writeTextFile(`${d}/tests/t${i}.txt`, "");
      }
    },
    new RegExp(`tests/ has more than ${MAX_HARBOR_TEST_FILES} files`),
  ],
  [
    "a test file name with a space",
    (d) => Deno.writeTextFile(`${d}/tests/a b.py`, ""),
    /tests\/a b\.py: test file names may hold only letters, digits/,
  ],
  [
    "environment folders nested too deep",
    (d) => Deno.mkdir(`${d}/environment/${"a/".repeat(MAX_TREE_DEPTH + 1)}`, { recursive: true }),
    new RegExp(`environment/(a/)+ is nested deeper than ${MAX_TREE_DEPTH} folders`),
  ],
  [
    "too many environment folders, though empty",
    async (d) => {
      for (let i = 0; i <= MAX_TREE_FOLDERS; i++) await Deno.mkdir(`${d}/environment/f${i}`);
    },
    new RegExp(`environment/ has more than ${MAX_TREE_FOLDERS} folders`),
  ],
  [
    "an environment file linking out of the folder",
    (d) => Deno.symlink("/etc", `${d}/environment/etc`),
    /environment\/etc is a symbolic link out of the task folder/,
  ],
];

Deno.test("a broken task folder is refused with what is wrong, naming task.harbor", async () => {
  await withDir(async (dir) => {
    for (const [index, [what, breakIt, expected]] of BROKEN.entries()) {
      const task = await copyFixture("fizzbuzz", dir, `case${index}`);
      await breakIt(task);
      const error = await resolveHarborTask({ harbor: task }, { cacheDir: dir, runsImages: false })
        .then(() => null, (error) => error);
      assert.ok(error instanceof HarborTaskError, `${what}: ${error}`);
      assert.match(error.message, /^task\.harbor: /, what);
      assert.match(error.message, expected, what);
      assert.equal(error.code, "invalid_request");
    }
    const missing = await loadHarborTask(`${dir}/nope`).catch((error) => error);
    assert.match(missing.message, /\/nope does not exist$/);
    await Deno.writeTextFile(`${dir}/file`, "");
    const file = await loadHarborTask(`${dir}/file`).catch((error) => error);
    assert.match(file.message, /\/file is not a folder$/);
  });
});

Deno.test("parseHarborReward() reads a number, an object with reward and metrics, an object of rewards", () => {
  const cases: [("reward.txt" | "reward.json"), string, unknown][] = [
    ["reward.txt", "1\n", { reward: 1, metrics: {} }],
    ["reward.txt", " 0.25 ", { reward: 0.25, metrics: {} }],
    ["reward.txt", "-1", { reward: -1, metrics: {} }],
    ["reward.json", "0.5", { reward: 0.5, metrics: {} }],
    ["reward.json", '{"reward": 1, "passed": 6, "note": "ok"}', {
      reward: 1,
      metrics: { passed: 6, note: "ok" },
    }],
    // No "reward" key: every key is a reward, and the score is their mean.
    ["reward.json", '{"correct": 1, "style": 0}', {
      reward: 0.5,
      metrics: { correct: 1, style: 0 },
    }],
  ];
  for (const [file, text, expected] of cases) {
    assert.deepEqual(parseHarborReward(file, text), { file, ...expected as object }, text);
  }
  const errors: [("reward.txt" | "reward.json"), string, RegExp][] = [
    ["reward.txt", "", /reward\.txt holds "", not a number/],
    ["reward.txt", "pass", /reward\.txt holds "pass", not a number/],
    ["reward.txt", "1 1", /not a number/],
    ["reward.json", "{", /reward\.json is not JSON: /],
    ["reward.json", "[1]", /holds an array: expected a number or an object/],
    ["reward.json", '"1"', /holds the string "1": expected a number/],
    ["reward.json", "{}", /is an empty object/],
    ["reward.json", '{"reward": "1"}', /"reward" is the string "1", not a finite number/],
    ["reward.json", '{"a": 1, "b": "x"}', /every key is a reward, but "b" is the string "x"/],
    ["reward.json", `{"reward": 1, "pad": "${"x".repeat(70_000)}"}`, /larger than 65536 bytes/],
    // A reward no verifier writes, planted to swamp a group: refused, in either file.
    ["reward.txt", "1e300", /reward\.txt holds reward 1e\+300, outside \[-1, 1\]/],
    ["reward.json", '{"reward": 1.5}', /holds reward 1\.5, outside \[-1, 1\]/],
    ["reward.json", '{"a": -3, "b": -3}', /holds reward -3, outside \[-1, 1\]/],
  ];
  for (const [file, text, expected] of errors) {
    const parsed = parseHarborReward(file, text);
    assert.ok("error" in parsed, text);
    assert.match(parsed.error, expected);
  }
});

Deno.test("TaskSchema's harbor_tests mode needs test.sh, distinct plain paths, and no other mode", () => {
  const file = (path: string) => ({ path, base64: btoa("true\n") });
  const base = { repo: "/r", base_commit: "HEAD" };
  assert.ok(TaskSchema.safeParse({ ...base, harbor_tests: [file("test.sh")] }).success);
  const message = (task: unknown) => {
    const parsed = TaskSchema.safeParse(task);
    return parsed.success ? "" : parsed.error.issues.map((i) => i.message).join("; ");
  };
  assert.match(message({ ...base, harbor_tests: [file("run.sh")] }), /no test\.sh/);
  assert.match(
    message({ ...base, harbor_tests: [file("test.sh"), file("test.sh")] }),
    /given twice/,
  );
  assert.match(message({ ...base, harbor_tests: [file("../test.sh")] }), /without \. or \.\./);
  assert.match(
    message({ ...base, harbor_tests: [file("test.sh")], eval_cmd: "true" }),
    /exactly one of/,
  );
  assert.match(
    message({ ...base, harbor_tests: [{ path: "test.sh", base64: "!!" }] }),
    /expected base64/,
  );
  assert.match(
    message({ ...base, harbor_tests: [file("test.sh")], workdir_alias: "/usr/app" }),
    /"\/usr" is the system's/,
  );
});

/** A local backend in a fresh folder, with evaluation deps caching under it. */
async function withLocal(
  fn: (deps: Awaited<ReturnType<typeof evaluateDeps>>, dir: string) => Promise<void>,
): Promise<void> {
  await withDir(async (dir) => {
    const backend = new LocalBackend({ root: `${dir}/sandboxes` });
    try {
      await fn(await evaluateDeps(backend, `${dir}/cache`), dir);
    } finally {
      await backend.close();
    }
  });
}

Deno.test("a Harbor fixture's gold patch scores 1 and no patch 0, the reward read from its file", async () => {
  await withLocal(async (deps, dir) => {
    const resolve = async (name: string) =>
      (await resolveHarborTask({ harbor: harborFixture(name) }, {
        cacheDir: deps.cacheDir,
        runsImages: false,
      })).task;
    const fizzbuzz = await resolve("fizzbuzz");
    const gold = await evaluate(deps, { task: fizzbuzz, patch: await harborGold("fizzbuzz") });
    assert.deepEqual(
      [gold.score, gold.reason, gold.detail, gold.verifier, gold.exit_code],
      [1, "passed", null, { file: "reward.txt", reward: 1, metrics: {} }, 0],
    );
    assert.match(gold.log_tail, /PASSED: 30 lines/, "FIZZBUZZ_LIMIT came from [verifier].env");
    const empty = await evaluate(deps, { task: fizzbuzz, patch: "" });
    assert.deepEqual(
      [empty.score, empty.reason, empty.verifier],
      [0, "tests_failed", { file: "reward.txt", reward: 0, metrics: {} }],
    );

    const words = await resolve("word_count");
    const solved = await evaluate(deps, { task: words, patch: await harborGold("word_count") });
    assert.deepEqual([solved.score, solved.reason, solved.verifier], [1, "passed", {
      file: "reward.json",
      reward: 1,
      metrics: { passed: 6, total: 6 },
    }]);
    const unsolved = await evaluate(deps, { task: words, patch: "" });
    assert.deepEqual([unsolved.score, unsolved.verifier], [0, {
      file: "reward.json",
      reward: 0,
      metrics: { passed: 3, total: 6 },
    }]);
    assert.deepEqual(await Array.fromAsync(Deno.readDir(`${dir}/sandboxes`)), [], "all removed");
  });
});

/** A task graded by `test.sh` alone, over a one-file repository. */
async function scriptTask(dir: string, testSh: string, extra: Task["env"] = {}): Promise<Task> {
  const repo = await scratchRepo(dir, { "app.txt": "base\n" });
  return TaskSchema.parse({
    repo: repo.path,
    base_commit: repo.commit,
    workdir_alias: "/app",
    env: extra,
    harbor_tests: [
      { path: "test.sh", base64: btoa(testSh) },
      { path: "data/expected.txt", base64: btoa("base\n"), executable: true },
    ],
  });
}

Deno.test("test.sh runs in the work tree with /tests holding the task's files and /logs/verifier empty", async () => {
  await withLocal(async (deps, dir) => {
    const task = await scriptTask(
      dir,
      [
        'test "$PWD" = /sandbox/repo || { echo "cwd $PWD"; exit 1; }',
        "cmp app.txt /tests/data/expected.txt && cmp /app/app.txt /tests/data/expected.txt",
        "test -x /tests/data/expected.txt",
        'test -z "$(ls -A /logs/verifier)" || { echo not empty; exit 1; }',
        "echo 0.75 > /logs/verifier/reward.txt",
        'echo \'{"reward": 0.5, "checks": 2}\' > /logs/verifier/reward.json',
        "exit 3",
      ].join("\n"),
    );
    const result = await evaluate(deps, { task, patch: "" });
    // reward.json is read first; the exit status does not count.
    assert.deepEqual(
      [result.score, result.reason, result.verifier, result.exit_code],
      [0.5, "passed", { file: "reward.json", reward: 0.5, metrics: { checks: 2 } }, 3],
      result.log_tail,
    );
  });
});

Deno.test("a reward.json planted by the code under test cannot raise the reward.txt its verifier wrote", async () => {
  await withLocal(async (deps, dir) => {
    const task = await scriptTask(
      dir,
      [
        // What a program run by the tests could do before its verifier writes the real reward.
        "echo '{\"reward\": 1}' > /logs/verifier/reward.json",
        "echo 0 > /logs/verifier/reward.txt",
      ].join("\n"),
    );
    const result = await evaluate(deps, { task, patch: "" });
    assert.deepEqual(
      [result.score, result.reason, result.verifier],
      [0, "tests_failed", { file: "reward.txt", reward: 0, metrics: {} }],
      result.log_tail,
    );
  });
});

Deno.test("a verifier that writes no reward, or a malformed one, at the base commit is the task's fault: no_tests_ran, no score", async () => {
  await withLocal(async (deps, dir) => {
    const none = await evaluate(deps, {
      task: await scriptTask(dir, "echo checked"),
      patch: "",
    });
    assert.deepEqual([none.score, none.reason, none.verifier], [null, "no_tests_ran", undefined]);
    assert.match(
      none.detail!,
      /^the verifier wrote no reward: test\.sh wrote no reward: neither \/logs\/verifier\/reward\.json/,
    );
    assert.equal(none.log_tail, "checked\n");

    const bad = await evaluate(deps, {
      task: await scriptTask(dir, "echo passed > /logs/verifier/reward.txt"),
      patch: "",
    });
    assert.deepEqual([bad.score, bad.reason], [null, "no_tests_ran"]);
    assert.match(bad.detail!, /\/logs\/verifier\/reward\.txt holds "passed\\n", not a number/);

    const huge = await evaluate(deps, {
      task: await scriptTask(dir, "head -c 200000 /dev/zero > /logs/verifier/reward.json"),
      patch: "",
    });
    assert.deepEqual([huge.score, huge.reason], [null, "no_tests_ran"]);
    assert.match(huge.detail!, /larger than 65536 bytes/);
  });
});

Deno.test("a patch that keeps a verifier from writing the reward it writes at the base commit scores 0, reason no_reward", async () => {
  await withLocal(async (deps, dir) => {
    // The verifier gives up without a reward when the work tree has a file named `broken`.
    const task = await scriptTask(
      dir,
      "test -f broken && exit 0\necho 0 > /logs/verifier/reward.txt\n",
    );
    const patch = [
      "diff --git a/broken b/broken",
      "new file mode 100644",
      "--- /dev/null",
      "+++ b/broken",
      "@@ -0,0 +1 @@",
      "+x",
      "",
    ].join("\n");
    const result = await evaluate(deps, { task, patch });
    assert.deepEqual([result.score, result.reason], [0, "no_reward"]);
    assert.deepEqual(result.base_run, { reason: "tests_failed", detail: null });
    assert.match(result.detail!, /^No test ran with the patch \(the verifier wrote no reward: /);
    assert.match(
      result.detail!,
      /at the base commit they do \(tests_failed\): the patch stopped them$/,
    );
  });
});

Deno.test("a patch cannot reach /tests or /logs: the verifier is the task's, rewards start empty", async () => {
  await withLocal(async (deps, dir) => {
    const task = await scriptTask(dir, "echo 0 > /logs/verifier/reward.txt\n");
    // The patch adds, in the work tree, a test.sh and a reward file of its own: neither counts.
    const patch = [
      "diff --git a/tests/test.sh b/tests/test.sh",
      "new file mode 100644",
      "--- /dev/null",
      "+++ b/tests/test.sh",
      "@@ -0,0 +1 @@",
      "+echo 1 > /logs/verifier/reward.json",
      "diff --git a/logs/verifier/reward.json b/logs/verifier/reward.json",
      "new file mode 100644",
      "--- /dev/null",
      "+++ b/logs/verifier/reward.json",
      "@@ -0,0 +1 @@",
      "+1",
      "",
    ].join("\n");
    const result = await evaluate(deps, { task, patch });
    assert.deepEqual(
      [result.score, result.reason, result.applied_cleanly, result.verifier?.file],
      [0, "tests_failed", true, "reward.txt"],
    );
  });
});

/**
 * A patch adding `check.sh`, the code under test its verifier runs: it does `plant`, then fails
 * its check. The verifier (`test.sh`) writes 0 after it, as a Harbor verifier writes its reward.
 */
function plantingPatch(plant: string): string {
  const lines = ["#!/bin/sh", ...plant.split("\n"), "exit 1"];
  return [
    "diff --git a/check.sh b/check.sh",
    "new file mode 100755",
    "--- /dev/null",
    "+++ b/check.sh",
    `@@ -0,0 +1,${lines.length} @@`,
    ...lines.map((line) => `+${line}`),
    "",
  ].join("\n");
}

const VERIFIER = [
  "cd /app",
  "if sh ./check.sh; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi",
].join("\n");

Deno.test("a reward the code under test plants scores what the tests say: read-only, replaced, linked, a folder in its place, or the verifier killed", async () => {
  const R = "/logs/verifier";
  const variants: [string, string, RegExp | null][] = [
    // Read-only files: the non-root verifier's `echo 0 >` used to fail, leaving the 1.
    [
      "read-only files",
      `echo 1 > ${R}/reward.txt; echo '{"reward": 1}' > ${R}/reward.json\n` +
      `chmod 444 ${R}/reward.txt ${R}/reward.json; chmod 555 ${R}`,
      null,
    ],
    // A file of its own moved over the reward, the folder then locked.
    [
      "replaced file",
      `echo 1 > ${R}/.planted; chmod 400 ${R}/.planted; mv -f ${R}/.planted ${R}/reward.txt\n` +
      `chmod 500 ${R}`,
      null,
    ],
    // A link to a file the verifier's write would go through, or to one it cannot write.
    [
      "symbolic link",
      `echo 1 > /app/one; chmod 444 /app/one; ln -s /app/one ${R}/reward.txt`,
      /reward\.txt is not a plain file/,
    ],
    [
      "folder in place of the file",
      `mkdir ${R}/reward.txt; echo '{"reward": 1}' > ${R}/reward.json; chmod 444 ${R}/reward.json`,
      /reward\.txt is not a plain file/,
    ],
    // The verifier stopped before it writes: what is there is the planted reward.
    ["verifier killed", `echo 1 > ${R}/reward.txt; kill -9 $PPID`, /stopped by a signal/],
  ];
  await withLocal(async (deps, dir) => {
    const task = await scriptTask(dir, VERIFIER);
    for (const [name, plant, refused] of variants) {
      const result = await evaluate(deps, { task, patch: plantingPatch(plant) });
      assert.equal(result.applied_cleanly, true, `${name}: ${result.detail}`);
      assert.equal(result.score, 0, `${name}: ${JSON.stringify(result)}`);
      if (refused === null) {
        // The verifier's own 0 is what was read.
        assert.equal(result.reason, "tests_failed", name);
        assert.deepEqual(result.verifier?.reward, 0, name);
      } else {
        assert.equal(result.reason, "no_reward", name);
        assert.match(result.detail!, refused, name);
      }
    }
    // The same verifier scores 1 for a check that passes: the rights it runs with change nothing.
    const honest = await evaluate(deps, { task, patch: plantingPatch("exit 0") });
    assert.deepEqual([honest.score, honest.reason], [1, "passed"], honest.log_tail);
  });
});

Deno.test("the code under test cannot rewrite test.sh while it runs: /tests is read-only to the verifier", async () => {
  await withLocal(async (deps, dir) => {
    const task = await scriptTask(dir, `${VERIFIER}\n# the end`);
    const patch = plantingPatch(
      "printf 'echo 1 > /logs/verifier/reward.txt\\nexit 0\\n' >> /tests/test.sh 2>/dev/null && echo rewrote",
    );
    const result = await evaluate(deps, { task, patch });
    assert.deepEqual([result.score, result.reason], [0, "tests_failed"], result.log_tail);
    assert.ok(!result.log_tail.includes("rewrote"), result.log_tail);
  });
});
