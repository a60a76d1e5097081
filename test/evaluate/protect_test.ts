import assert from "node:assert/strict";
import { restoreScript, tamperedPaths } from "../../lib/evaluate/mod.ts";
import { git, makeRepo } from "../_git_repo.ts";

Deno.test("tamperedPaths() reads git's porcelain status, renames and quoted names included", () => {
  const output = [
    " M tests/test_calc.py",
    "?? tests/new file.py",
    "R  tests/a.py -> tests/b.py",
    ' D "tests/caf\\u00e9.py"',
    "error: something else",
    "",
  ].join("\n");
  assert.deepEqual(tamperedPaths(output), [
    "tests/test_calc.py",
    "tests/new file.py",
    "tests/a.py",
    "tests/b.py",
    "tests/café.py",
  ]);
});

Deno.test("restoreScript() puts protected paths back as at HEAD and lists what had changed", async () => {
  const repo = await makeRepo(); // a.txt "three", b.txt "bee" at HEAD
  try {
    await Deno.writeTextFile(`${repo.path}/a.txt`, "tampered\n");
    await Deno.remove(`${repo.path}/b.txt`);
    await Deno.writeTextFile(`${repo.path}/added.txt`, "new\n");
    await Deno.mkdir(`${repo.path}/extra`);
    await Deno.writeTextFile(`${repo.path}/extra/x.txt`, "x\n");
    await Deno.writeTextFile(`${repo.path}/free.txt`, "not protected\n");
    const script = restoreScript(["a.txt", "b.txt", "added.txt", "extra", "missing.txt"]);
    const { code, stdout } = await new Deno.Command("bash", {
      args: ["-c", script],
      cwd: repo.path,
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.equal(code, 0);
    assert.deepEqual(tamperedPaths(new TextDecoder().decode(stdout)), [
      "a.txt",
      "b.txt",
      "added.txt",
      "extra/x.txt",
    ]);
    assert.equal(await Deno.readTextFile(`${repo.path}/a.txt`), "three\n");
    assert.equal(await Deno.readTextFile(`${repo.path}/b.txt`), "bee\n");
    assert.equal(await git(repo.path, "status", "--porcelain"), "?? free.txt\n");
  } finally {
    await Deno.remove(repo.path, { recursive: true });
  }
});
