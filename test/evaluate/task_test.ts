import assert from "node:assert/strict";
import { gradingMode, TaskSchema } from "../../lib/evaluate/mod.ts";

const SHA = "1bdf00de100a0db07eae541924db3a45524b6156";

Deno.test("TaskSchema takes the minimal eval_cmd task and fills the defaults", () => {
  const task = TaskSchema.parse({ repo: "/srv/repo", base_commit: SHA, eval_cmd: "make test" });
  assert.deepEqual(task, {
    repo: "/srv/repo",
    base_commit: SHA,
    pre_commands: [],
    problem_statement: "",
    eval_cmd: "make test",
    f2p_filename: "test_f2p.py",
    pass_to_pass: [],
    protected_paths: [],
    env: {},
  });
  assert.equal(gradingMode(task), "eval_cmd");
});

Deno.test("TaskSchema takes every fixture task as written", async () => {
  for (const name of ["python_unittest", "python_pytest", "node_test"]) {
    const raw = JSON.parse(
      await Deno.readTextFile(new URL(`../../fixtures/tasks/${name}/task.json`, import.meta.url)),
    );
    const parsed = TaskSchema.safeParse(raw);
    assert.ok(parsed.success, `${name}: ${JSON.stringify(parsed.error?.issues)}`);
  }
});

Deno.test("TaskSchema wants exactly one grading mode", () => {
  const base = { repo: "fixture:node_test", base_commit: SHA };
  for (
    const task of [
      base,
      { ...base, eval_cmd: "x", f2p_script: "y" },
      { ...base, eval_cmd: "x", fail_to_pass: ["t"], runner: "pytest" },
    ]
  ) {
    const parsed = TaskSchema.safeParse(task);
    assert.equal(parsed.success, false);
    assert.match(
      parsed.error!.issues[0].message,
      /exactly one of eval_cmd, f2p_script, or fail_to_pass/,
    );
  }
});

Deno.test("TaskSchema refuses test lists without a runner and scripts it cannot run", () => {
  const lists = TaskSchema.safeParse({ repo: "/r", base_commit: SHA, fail_to_pass: ["t"] });
  assert.deepEqual(lists.error?.issues.map((i) => [i.path.join("."), i.message]), [
    ["runner", "fail_to_pass needs a runner (unittest, pytest, node) or a test_cmd"],
  ]);
  const script = TaskSchema.safeParse({
    repo: "/r",
    base_commit: SHA,
    f2p_script: "x",
    f2p_filename: "check.rb",
  });
  assert.deepEqual(script.error?.issues.map((i) => i.path.join(".")), ["f2p_cmd"]);
});

Deno.test("TaskSchema refuses relative paths, option-like commits and bad fixture names", () => {
  const cases: [Record<string, unknown>, string][] = [
    [{ repo: "repo", base_commit: SHA }, "repo"],
    [{ repo: "fixture:Bad-Name", base_commit: SHA }, "repo"],
    [{ repo: "/r", base_commit: "--upload-pack=evil" }, "base_commit"],
    [{ base_commit: SHA }, "repo"],
    [{ repo: "/r", base_commit: SHA, protected_paths: ["../tests"] }, "protected_paths.0"],
    [{ repo: "/r", base_commit: SHA, protected_paths: ["/etc"] }, "protected_paths.0"],
    [{ repo: "/r", base_commit: SHA, protected_paths: ["--force"] }, "protected_paths.0"],
    [{ repo: "/r", base_commit: SHA, test_patch: "--- a/x\n+++ b/../x\n" }, "test_patch"],
  ];
  for (const [fields, path] of cases) {
    const parsed = TaskSchema.safeParse({ ...fields, eval_cmd: "true" });
    assert.equal(parsed.success, false, JSON.stringify(fields));
    assert.equal(parsed.error!.issues[0].path.join("."), path, JSON.stringify(fields));
  }
  const url = TaskSchema.safeParse({
    repo: "https://example.com/r.git",
    base_commit: SHA,
    eval_cmd: "true",
  });
  assert.equal(url.success, true);
  const image = TaskSchema.safeParse({ repo_dir: "/testbed", base_commit: SHA, eval_cmd: "true" });
  assert.equal(image.success, true);
});
