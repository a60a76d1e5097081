import assert from "node:assert/strict";
import { bundleCommit } from "../../lib/sandbox/git_bundle.ts";
import { RepoError } from "../../lib/sandbox/sandbox.ts";
import { git, makeRepo } from "../_git_repo.ts";

Deno.test("bundleCommit() packs a non-HEAD commit given by short id, which a clone checks out", async () => {
  const repo = await makeRepo();
  const dir = await Deno.makeTempDir({ prefix: "sbx-bundles-" });
  try {
    const [, second, head] = repo.commits;
    const bundle = await bundleCommit(repo.path, second.slice(0, 8), dir);
    assert.equal(bundle.commit, second);
    assert.equal(bundle.path.startsWith(`${dir}/`), true);
    // Only the bundle is left: the temporary bare repository is gone.
    const left = [...Deno.readDirSync(dir)].map((entry) => entry.name);
    assert.deepEqual(left, [bundle.path.slice(dir.length + 1)]);

    const clone = `${dir}/clone`;
    await git(dir, "clone", "--quiet", "--no-checkout", bundle.path, clone);
    await git(clone, "checkout", "--quiet", "--detach", bundle.commit);
    assert.deepEqual(
      {
        a: await Deno.readTextFile(`${clone}/a.txt`),
        b: await Deno.readTextFile(`${clone}/b.txt`),
        head: (await git(clone, "rev-parse", "HEAD")).trim(),
        status: await git(clone, "status", "--porcelain"),
        log: (await git(clone, "log", "--format=%s")).trim().split("\n"),
      },
      { a: "two\n", b: "bee\n", head: second, status: "", log: ["commit 2", "commit 1"] },
    );
    // The history stops at the commit: the later HEAD is not in the bundle.
    await assert.rejects(git(clone, "cat-file", "-e", `${head}^{commit}`));
  } finally {
    await Deno.remove(dir, { recursive: true });
    await Deno.remove(repo.path, { recursive: true });
  }
});

Deno.test("bundleCommit() throws RepoError naming an unknown commit and leaves nothing behind", async () => {
  const repo = await makeRepo();
  const dir = await Deno.makeTempDir({ prefix: "sbx-bundles-" });
  try {
    await assert.rejects(
      bundleCommit(repo.path, "0badc0de", dir),
      (error: unknown) => {
        assert.ok(error instanceof RepoError);
        assert.match(error.message, /"0badc0de"/);
        assert.match(error.message, new RegExp(repo.path));
        return true;
      },
    );
    assert.deepEqual([...Deno.readDirSync(dir)], []);
  } finally {
    await Deno.remove(dir, { recursive: true });
    await Deno.remove(repo.path, { recursive: true });
  }
});

Deno.test("bundleCommit() throws RepoError for a host path that is not a git repository", async () => {
  const notRepo = await Deno.makeTempDir({ prefix: "sbx-not-a-repo-" });
  const dir = await Deno.makeTempDir({ prefix: "sbx-bundles-" });
  try {
    await assert.rejects(bundleCommit(notRepo, "HEAD", dir), (error: unknown) => {
      assert.ok(error instanceof RepoError);
      assert.match(error.message, new RegExp(notRepo));
      return true;
    });
    assert.deepEqual([...Deno.readDirSync(dir)], []);
  } finally {
    await Deno.remove(dir, { recursive: true });
    await Deno.remove(notRepo, { recursive: true });
  }
});
