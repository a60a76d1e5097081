import assert from "node:assert/strict";
import {
  restoreProtected,
  restoreScript,
  type RunInTree,
  tamperedPaths,
} from "../../lib/evaluate/mod.ts";
import { git, makeRepo } from "../_git_repo.ts";

/** Runs commands in `cwd` with bash, as a sandbox would (stderr into stdout). */
function runIn(cwd: string): RunInTree {
  return async (command) => {
    const started = performance.now();
    const { code, stdout } = await new Deno.Command("bash", {
      args: ["-c", `{ ${command}\n} 2>&1`],
      cwd,
      stdout: "piped",
    }).output();
    return {
      exitCode: code,
      stdout: new TextDecoder().decode(stdout),
      stderr: "",
      timedOut: false,
      truncated: false,
      durationMs: performance.now() - started,
    };
  };
}

Deno.test("tamperedPaths() reads git's porcelain status, renames and quoted names included", () => {
  const output = [
    " M tests/test_calc.py",
    "?? tests/new file.py",
    "R  tests/a.py -> tests/b.py",
    ' D "tests/caf\\303\\251.py"',
    "!! tests/ignored/shadow.py",
    "error: something else",
    "",
  ].join("\n");
  assert.deepEqual(tamperedPaths(output), [
    "tests/test_calc.py",
    "tests/new file.py",
    "tests/a.py",
    "tests/b.py",
    "tests/café.py",
    "tests/ignored/shadow.py",
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

Deno.test("restoreProtected() removes and reports files a .gitignore hides under a protected path", async () => {
  const repo = await makeRepo(); // a.txt, b.txt at HEAD
  try {
    await Deno.mkdir(`${repo.path}/guarded/shadow`, { recursive: true });
    await Deno.writeTextFile(`${repo.path}/guarded/shadow/__init__.py`, "cheat\n");
    await Deno.mkdir(`${repo.path}/guarded/__pycache__`, { recursive: true });
    await Deno.writeTextFile(`${repo.path}/guarded/__pycache__/x.pyc`, "stale\n");
    await Deno.writeTextFile(`${repo.path}/.gitignore`, "guarded/shadow/\n__pycache__/\n");
    await Deno.writeTextFile(`${repo.path}/a.txt`, "tampered\n");
    const restored = await restoreProtected(runIn(repo.path), ["guarded", "a.txt"]);
    assert.deepEqual(restored, {
      tampered: ["a.txt", "guarded/__pycache__/x.pyc", "guarded/shadow/__init__.py"],
    });
    assert.equal(await Deno.readTextFile(`${repo.path}/a.txt`), "three\n");
    await assert.rejects(Deno.stat(`${repo.path}/guarded`), Deno.errors.NotFound);
    assert.equal(await git(repo.path, "status", "--porcelain"), "?? .gitignore\n");
  } finally {
    await Deno.remove(repo.path, { recursive: true });
  }
});

Deno.test("restoreProtected() gives back the base bytes when a .gitattributes converts them on checkout", async () => {
  const repo = await makeRepo();
  try {
    // A checkout of a.txt would now write CRLF line ends: not the base's bytes.
    await Deno.writeTextFile(`${repo.path}/.gitattributes`, "*.txt text eol=crlf\n");
    const restored = await restoreProtected(runIn(repo.path), ["a.txt", "b.txt"]);
    assert.deepEqual(restored, { tampered: ["a.txt", "b.txt"] });
    assert.equal(await Deno.readTextFile(`${repo.path}/a.txt`), "three\n");
    assert.equal(await Deno.readTextFile(`${repo.path}/b.txt`), "bee\n");
  } finally {
    await Deno.remove(repo.path, { recursive: true });
  }
});

Deno.test("restoreProtected() restores a file whose protected folder the patch made a symlink", async () => {
  const repo = await makeRepo();
  try {
    await Deno.mkdir(`${repo.path}/tests`);
    await Deno.writeTextFile(`${repo.path}/tests/t.txt`, "base\n");
    await git(repo.path, "add", "tests");
    await git(repo.path, "commit", "--quiet", "-m", "tests");
    // The patch: `tests/` gone, `tests` a link to a folder holding a test that passes.
    await Deno.remove(`${repo.path}/tests`, { recursive: true });
    await Deno.mkdir(`${repo.path}/elsewhere`);
    await Deno.writeTextFile(`${repo.path}/elsewhere/t.txt`, "cheat\n");
    await Deno.symlink("elsewhere", `${repo.path}/tests`);
    const restored = await restoreProtected(runIn(repo.path), ["tests/t.txt"]);
    assert.deepEqual(restored, { tampered: ["tests/t.txt"] });
    assert.ok((await Deno.lstat(`${repo.path}/tests`)).isDirectory);
    assert.equal(await Deno.readTextFile(`${repo.path}/tests/t.txt`), "base\n");
  } finally {
    await Deno.remove(repo.path, { recursive: true });
  }
});

Deno.test("restoreProtected() reads protected paths as names, not as glob patterns", async () => {
  const repo = await makeRepo(); // a.txt, b.txt at HEAD
  try {
    await Deno.writeTextFile(`${repo.path}/a.txt`, "changed, not protected\n");
    const restored = await restoreProtected(runIn(repo.path), ["?.txt"]);
    assert.deepEqual(restored, { tampered: [] });
    assert.equal(await Deno.readTextFile(`${repo.path}/a.txt`), "changed, not protected\n");
  } finally {
    await Deno.remove(repo.path, { recursive: true });
  }
});
