import assert from "node:assert/strict";
import {
  type Evidence,
  JudgerConfigError,
  JudgerError,
  loadJudgers,
  TaskSchema,
} from "../../lib/evaluate/mod.ts";

const ROOT = new URL("../../", import.meta.url).pathname;
const SHA = "1bdf00de100a0db07eae541924db3a45524b6156";
const LISTS = TaskSchema.parse({
  repo: "/r",
  base_commit: SHA,
  runner: "pytest",
  fail_to_pass: ["a", "b", "c", "d"],
  pass_to_pass: ["p"],
});

function evidence(passed: string[], failed: string[]): Evidence {
  return {
    applied_cleanly: true,
    reason: failed.length === 0 ? "passed" : "tests_failed",
    detail: null,
    tests: { passed, failed },
    tampered: [],
    exit_code: failed.length === 0 ? 0 : 1,
    log_tail: "",
  };
}

async function configError(promise: Promise<unknown>): Promise<string> {
  let message = "";
  await assert.rejects(promise, (error: Error) => {
    assert.ok(error instanceof JudgerConfigError, String(error));
    message = error.message;
    return true;
  });
  return message;
}

Deno.test("loadJudgers() has the built-in tests judger: 1 when the tests pass, else 0", async () => {
  const judgers = await loadJudgers({}, "tests", ROOT);
  assert.deepEqual([...judgers.keys()], ["tests"]);
  const tests = judgers.get("tests")!;
  const pass = await tests.judge({
    task: LISTS,
    patch: "",
    evidence: evidence(["a", "b", "c", "d", "p"], []),
  });
  const fail = await tests.judge({
    task: LISTS,
    patch: "",
    evidence: evidence(["a", "p"], ["b", "c", "d"]),
  });
  assert.deepEqual([pass, fail], [{ score: 1 }, { score: 0 }]);
});

Deno.test("loadJudgers() configures a built-in with options: partial credit over fail_to_pass", async () => {
  const judgers = await loadJudgers(
    { partial: { use: "tests", options: { partial_credit: true } } },
    "partial",
    ROOT,
  );
  const partial = judgers.get("partial")!;
  const scores = await Promise.all([
    partial.judge({ task: LISTS, patch: "", evidence: evidence(["a", "p"], ["b", "c", "d"]) }),
    partial.judge({ task: LISTS, patch: "", evidence: evidence(["a", "b", "c"], ["d", "p"]) }),
  ]);
  assert.deepEqual(scores, [{ score: 0.25 }, { score: 0 }]);
});

Deno.test("loadJudgers() loads a module judger with its checked options", async () => {
  const judgers = await loadJudgers(
    { concise: { use: "./fixtures/judgers/length_penalty.ts", options: { per_line: 0.1 } } },
    "tests",
    ROOT,
  );
  const concise = judgers.get("concise")!;
  assert.deepEqual(concise.options, { per_line: 0.1, floor: 0.5 });
  const patch = "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n";
  const reward = await concise.judge({ task: LISTS, patch, evidence: evidence(["a"], []) });
  assert.deepEqual(reward, { score: 0.8, changed_lines: 2 });
});

Deno.test("loadJudgers() names an unknown default judger", async () => {
  const message = await configError(loadJudgers({}, "nonexistent_judger", ROOT));
  assert.equal(
    message,
    'Unknown judger "nonexistent_judger" in DEFAULT_JUDGER: configured judgers are tests',
  );
});

Deno.test("loadJudgers() names a judger whose module is missing, exports no judge, or refuses its options", async () => {
  assert.match(
    await configError(
      loadJudgers({ gone: { use: "./fixtures/judgers/missing.ts" } }, "tests", ROOT),
    ),
    /^Judger "gone" cannot be loaded from "\.\/fixtures\/judgers\/missing\.ts": /,
  );
  assert.equal(
    await configError(
      loadJudgers({ odd: { use: "./fixtures/judgers/no_judge.ts" } }, "tests", ROOT),
    ),
    'Judger "odd" module "./fixtures/judgers/no_judge.ts" exports no judge function (export judge or a default function)',
  );
  assert.equal(
    await configError(
      loadJudgers(
        { concise: { use: "./fixtures/judgers/length_penalty.ts", options: { per_line: "x" } } },
        "tests",
        ROOT,
      ),
    ),
    'Judger "concise" has bad options: per_line must be a number ≥ 0',
  );
  assert.equal(
    await configError(
      loadJudgers({ t: { use: "tests", options: { partial: true } } }, "tests", ROOT),
    ),
    'Judger "t" has bad options: options: Unrecognized key: "partial"',
  );
  assert.match(
    await configError(loadJudgers({ x: { use: "llm-judge" } }, "tests", ROOT)),
    /^Judger "x" uses "llm-judge", which is neither a built-in judger \(tests\) nor a module path/,
  );
});

Deno.test("a judger that returns no numeric score is an error naming it", async () => {
  const judgers = await loadJudgers(
    { broken: { use: "./fixtures/judgers/bad_score.ts" } },
    "tests",
    ROOT,
  );
  await assert.rejects(
    judgers.get("broken")!.judge({ task: LISTS, patch: "", evidence: evidence([], []) }),
    (error: Error) => {
      assert.ok(error instanceof JudgerError);
      assert.equal(
        error.message,
        'Judger "broken" returned an object whose score is "1": expected an object with a finite numeric score',
      );
      return true;
    },
  );
});
