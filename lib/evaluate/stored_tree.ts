/**
 * A repository kept in the store instead of on one host's disk: the work tree a Harbor task's
 * `environment/` becomes, which only the host that read the folder could build. It travels as a
 * git bundle (its one commit, compressed) and is unpacked under any host's cache folder, with
 * the same commit id. A stored task names it `tree:<digest>`; clients never do.
 *
 * @module
 */
import { BUILD_GIT_ENV, placedRepo } from "./fixture_repos.ts";
import { hostCommand, RepoError } from "../sandbox/mod.ts";

/** A stored task's `repo` naming a stored tree. */
const TREE_REPO = /^tree:([0-9a-f]{32})$/;

/** The `repo` of a stored task whose work tree is stored tree `digest`. */
export function treeRepo(digest: string): string {
  return `tree:${digest}`;
}

/**
 * The digest a task's `repo` names as a stored tree, or `null` for a path, a fixture or a URL.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { storedTreeDigest, treeRepo } from "./stored_tree.ts";
 * const digest = "0123456789abcdef0123456789abcdef";
 * assert.equal(storedTreeDigest(treeRepo(digest)), digest);
 * assert.equal(storedTreeDigest("/srv/repo"), null);
 * ```
 */
export function storedTreeDigest(repo: string | undefined): string | null {
  return repo === undefined ? null : TREE_REPO.exec(repo)?.[1] ?? null;
}

/** Where a host keeps the repository of stored tree `digest` (where Harbor builds it too). */
export function storedTreePath(cacheDir: string, digest: string): string {
  return `${cacheDir}/harbor/${digest}`;
}

/** The repository at `path` (every ref and the commits they reach) as a git bundle. */
export async function bundleRepo(path: string): Promise<Uint8Array> {
  const file = await Deno.makeTempFile({ prefix: "rg-bundle-", suffix: ".bundle" });
  try {
    await hostCommand("git", ["-C", path, "bundle", "create", "--quiet", file, "--all"], {
      env: BUILD_GIT_ENV,
    });
    return await Deno.readFile(file);
  } finally {
    await Deno.remove(file).catch(() => {});
  }
}

/**
 * The repository of `bundle` at `target`, its `HEAD` checked out; kept when already there (the
 * same digest is the same files).
 *
 * @throws {RepoError} when the bundle is not one, or its `HEAD` is not `commit`.
 */
export function unbundledRepo(target: string, bundle: Uint8Array, commit: string): Promise<string> {
  return placedRepo(target, async (staging) => {
    const file = `${staging}.bundle`;
    await Deno.writeFile(file, bundle);
    try {
      await hostCommand("git", ["clone", "--quiet", file, staging], { env: BUILD_GIT_ENV });
      // The bundle file is gone after this: the repository names no remote.
      await hostCommand("git", ["-C", staging, "remote", "remove", "origin"], {
        env: BUILD_GIT_ENV,
      });
      const head = (await hostCommand("git", ["-C", staging, "rev-parse", "HEAD"])).trim();
      if (head !== commit) {
        throw new RepoError(`The stored repository's HEAD is ${head}, not ${commit}`);
      }
    } catch (error) {
      if (error instanceof RepoError) throw error;
      throw new RepoError(`Cannot unpack the stored repository: ${(error as Error).message}`, {
        cause: error,
      });
    } finally {
      await Deno.remove(file).catch(() => {});
    }
  });
}
