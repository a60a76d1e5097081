/**
 * A repository kept in the store as a git bundle: unpacked on another host's cache folder it is
 * the same commit and the same files; a bundle that is not one, or not the commit named, is
 * refused; hosts unpacking one target at once end with one repository.
 */
import assert from "node:assert/strict";
import {
  bundleRepo,
  committedRepo,
  storedTreeDigest,
  treeRepo,
  unbundledRepo,
} from "../../lib/evaluate/mod.ts";
import { hostCommand, RepoError } from "../../lib/sandbox/mod.ts";

/** Every path, mode and blob id of `HEAD`, and the commit: what a repository holds. */
async function contents(path: string): Promise<string[]> {
  const head = (await hostCommand("git", ["-C", path, "rev-parse", "HEAD"])).trim();
  const tree = await hostCommand("git", ["-C", path, "ls-tree", "-r", "--full-tree", "HEAD"]);
  return [head, ...tree.trim().split("\n")];
}

/** A repository of a few files, one executable, one in a subfolder, one not UTF-8. */
async function sourceRepo(cache: string): Promise<string> {
  return await committedRepo(`${cache}/harbor/${"a".repeat(32)}`, async (dir) => {
    await Deno.mkdir(`${dir}/src/pkg`, { recursive: true });
    await Deno.writeTextFile(`${dir}/src/pkg/mod.py`, "def f():\n    return 1\n");
    await Deno.writeTextFile(`${dir}/run.sh`, "#!/bin/sh\necho hi\n");
    await Deno.chmod(`${dir}/run.sh`, 0o755);
    await Deno.writeFile(`${dir}/data.bin`, new Uint8Array([0, 255, 254, 10, 0xc3]));
  });
}

/** Runs `body` with two cache folders, a submitting host's and another's, removed after. */
async function onTwoHosts(body: (here: string, there: string) => Promise<void>): Promise<void> {
  const here = await Deno.makeTempDir();
  const there = await Deno.makeTempDir();
  try {
    await body(here, there);
  } finally {
    await Deno.remove(here, { recursive: true });
    await Deno.remove(there, { recursive: true });
  }
}

/** The names in `dir`. */
function namesIn(dir: string): string[] {
  return [...Deno.readDirSync(dir)].map((entry) => entry.name);
}

Deno.test("a stored tree is named tree:<digest> in a stored task, and nothing else is", () => {
  const digest = "0123456789abcdef0123456789abcdef";
  assert.equal(treeRepo(digest), `tree:${digest}`);
  assert.equal(storedTreeDigest(treeRepo(digest)), digest);
  for (
    const other of [
      undefined,
      "/srv/repo",
      "fixture:python_unittest",
      "tree:",
      `tree:${digest}0`,
      `tree:${digest.toUpperCase()}`,
      `/tree:${digest}`,
    ]
  ) {
    assert.equal(storedTreeDigest(other), null, String(other));
  }
});

Deno.test("unbundledRepo() on another cache folder is the bundled repository: the same commit, paths, modes and bytes", () =>
  onTwoHosts(async (here, there) => {
    const source = await sourceRepo(here);
    const bundle = await bundleRepo(source);
    const [commit] = await contents(source);
    const target = `${there}/harbor/${"a".repeat(32)}`;
    assert.equal(await unbundledRepo(target, bundle, commit), target);
    assert.deepEqual(await contents(target), await contents(source));
    // A work tree checked out, with its executable bit, and no remote naming the gone bundle.
    assert.deepEqual(
      await Deno.readFile(`${target}/data.bin`),
      new Uint8Array([0, 255, 254, 10, 0xc3]),
    );
    assert.equal((await Deno.stat(`${target}/run.sh`)).mode! & 0o111, 0o111);
    assert.equal((await hostCommand("git", ["-C", target, "remote"])).trim(), "");
    assert.equal((await hostCommand("git", ["-C", target, "status", "--porcelain"])).trim(), "");
    // Kept when there: a second unpack reads nothing (a bundle of nothing would fail).
    assert.equal(await unbundledRepo(target, new Uint8Array(), commit), target);
  }));

Deno.test("unbundledRepo() refuses a bundle that is not one, or not the commit named, and leaves nothing behind", () =>
  onTwoHosts(async (here, there) => {
    const bundle = await bundleRepo(await sourceRepo(here));
    const target = `${there}/harbor/${"b".repeat(32)}`;
    await assert.rejects(
      unbundledRepo(target, bundle, "f".repeat(40)),
      { name: "RepoError", message: /HEAD is [0-9a-f]{40}, not f{40}/ },
    );
    const broken = bundle.slice(0, bundle.length - 30);
    await assert.rejects(
      unbundledRepo(target, broken, "f".repeat(40)),
      { name: "RepoError", message: /^Cannot unpack the stored repository/ },
    );
    await assert.rejects(
      unbundledRepo(target, new TextEncoder().encode("not a bundle"), "f".repeat(40)),
      RepoError,
    );
    // No repository, no staging folder, no bundle file left in the cache.
    assert.deepEqual(namesIn(`${there}/harbor`), []);
  }));

Deno.test("unbundledRepo() run by several processes at once on one target ends with one whole repository", () =>
  onTwoHosts(async (here, there) => {
    const source = await sourceRepo(here);
    const bundle = await bundleRepo(source);
    const [commit] = await contents(source);
    const target = `${there}/harbor/${"c".repeat(32)}`;
    const paths = await Promise.all(
      Array.from({ length: 6 }, () => unbundledRepo(target, bundle, commit)),
    );
    assert.deepEqual(paths, Array(6).fill(target));
    assert.deepEqual(await contents(target), await contents(source));
    assert.deepEqual(namesIn(`${there}/harbor`), ["c".repeat(32)]);
  }));
