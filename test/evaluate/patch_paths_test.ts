import assert from "node:assert/strict";
import { checkPatchPaths, PatchPathError, patchPaths } from "../../lib/evaluate/mod.ts";

const EDIT = [
  "diff --git a/src/x.py b/src/x.py",
  "index 1111111..2222222 100644",
  "--- a/src/x.py",
  "+++ b/src/x.py",
  "@@ -1 +1 @@",
  "-a",
  "+b",
  "",
].join("\n");

Deno.test("patchPaths() lists every path a diff names, as -p1 reads them", () => {
  const patch = [
    EDIT,
    "diff --git a/old name.py b/new name.py",
    "similarity index 90%",
    "rename from old name.py",
    "rename to new name.py",
    "diff --git a/added.txt b/added.txt",
    "new file mode 100644",
    "--- /dev/null",
    "+++ b/added.txt\t2026-01-01 00:00:00",
    "@@ -0,0 +1 @@",
    "+x",
    'diff --git "a/sp\\303\\251cial.txt" "b/sp\\303\\251cial.txt"',
    "",
  ].join("\n");
  assert.deepEqual(patchPaths(patch), [
    "src/x.py",
    "old name.py",
    "new name.py",
    "added.txt",
    "spécial.txt",
  ]);
});

Deno.test("checkPatchPaths() accepts a patch inside the repository", () => {
  checkPatchPaths(EDIT);
  checkPatchPaths("");
});

Deno.test("checkPatchPaths() refuses paths that leave the repository or touch .git", () => {
  const cases: [string, RegExp][] = [
    [
      "--- a/../outside\n+++ b/../outside\n@@ -0,0 +1 @@\n+x\n",
      /"\.\.\/outside", outside the repository/,
    ],
    ["diff --git a/src/../../x b/src/../../x\n", /"src\/\.\.\/\.\.\/x"/],
    ["--- /dev/null\n+++ b/.git/hooks/pre-commit\n", /\.git folder/],
    ["rename from ok.txt\nrename to ../../etc/passwd\n", /"\.\.\/\.\.\/etc\/passwd"/],
    ["diff --git a//etc/passwd b//etc/passwd\n", /absolute path/],
  ];
  for (const [patch, message] of cases) {
    assert.throws(() => checkPatchPaths(patch), (error: Error) => {
      assert.ok(error instanceof PatchPathError, String(error));
      assert.match(error.message, message);
      return true;
    });
  }
});

Deno.test("patchPaths() keeps a quoted path that ends in a lone backslash instead of failing", () => {
  assert.deepEqual(patchPaths('--- "a/odd\\"\n+++ "b/odd\\"\n'), ["odd\\"]);
});
