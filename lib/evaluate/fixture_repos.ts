/**
 * Fixture tasks: tiny repositories kept in `fixtures/tasks/<name>/repo/` as plain files, turned
 * into git repositories with one commit whose id is the same on every machine (fixed author,
 * committer and dates), so a task can name its `base_commit` in advance.
 *
 * @module
 */
import { hostCommand, RepoError } from "../sandbox/mod.ts";

/** Folder of the fixture tasks. */
export const FIXTURE_TASKS_DIR = new URL("../../fixtures/tasks/", import.meta.url).pathname;

/** Fixture names: lowercase letters, digits and `_`. */
export const FIXTURE_NAME = /^[a-z0-9_]{1,64}$/;

/** Identity and dates of the fixture commit; changing them changes every fixture's commit id. */
const FIXTURE_COMMIT_ENV = {
  GIT_AUTHOR_NAME: "Rollout Gateway fixtures",
  GIT_AUTHOR_EMAIL: "fixtures@rollout-gateway.local",
  GIT_AUTHOR_DATE: "2026-01-01T00:00:00Z",
  GIT_COMMITTER_NAME: "Rollout Gateway fixtures",
  GIT_COMMITTER_EMAIL: "fixtures@rollout-gateway.local",
  GIT_COMMITTER_DATE: "2026-01-01T00:00:00Z",
};

const built = new Map<string, Promise<string>>();

/**
 * The path of a git repository holding fixture `name` at its fixed commit, built under
 * `cacheDir` on first use (once per process, atomically across processes).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { fixtureRepo } from "./fixture_repos.ts";
 * const cache = await Deno.makeTempDir();
 * const path = await fixtureRepo("python_unittest", cache);
 * assert.ok((await Deno.stat(`${path}/.git`)).isDirectory);
 * await Deno.remove(cache, { recursive: true });
 * ```
 * @throws {RepoError} when no such fixture exists.
 */
export function fixtureRepo(name: string, cacheDir: string): Promise<string> {
  if (!FIXTURE_NAME.test(name)) throw new RepoError(`Invalid fixture name "${name}"`);
  const key = `${cacheDir}\0${name}`;
  let path = built.get(key);
  if (!path) {
    path = build(name, cacheDir);
    built.set(key, path);
    path.catch(() => built.delete(key));
  }
  return path;
}

async function build(name: string, cacheDir: string): Promise<string> {
  const source = `${FIXTURE_TASKS_DIR}${name}/repo`;
  try {
    if (!(await Deno.stat(source)).isDirectory) throw new Error("not a folder");
  } catch {
    throw new RepoError(`Unknown fixture "${name}": no folder fixtures/tasks/${name}/repo`);
  }
  return await committedRepo(
    `${cacheDir}/fixtures/${name}`,
    (staging) => copyTree(source, staging),
  );
}

/**
 * A git repository at `target` of one commit of the files `fill` writes into an empty folder,
 * with the fixed identity and dates of fixtures (the same files give the same commit id). Built
 * in a staging folder beside `target` and renamed into place, so processes building the same
 * target at once all end with one whole repository; an existing one is kept.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { committedRepo } from "./fixture_repos.ts";
 * const cache = await Deno.makeTempDir();
 * const path = await committedRepo(`${cache}/x`, (dir) => Deno.writeTextFile(`${dir}/a`, "1"));
 * assert.equal(await Deno.readTextFile(`${path}/a`), "1");
 * await Deno.remove(cache, { recursive: true });
 * ```
 */
export function committedRepo(
  target: string,
  fill: (dir: string) => Promise<void>,
): Promise<string> {
  return placedRepo(target, async (staging) => {
    await fill(staging);
    await hostCommand("git", ["init", "--quiet", "--initial-branch=main", staging], {
      env: BUILD_GIT_ENV,
    });
    await hostCommand("git", ["-C", staging, "add", "--all"], { env: BUILD_GIT_ENV });
    await hostCommand(
      "git",
      ["-C", staging, "commit", "--quiet", "--allow-empty", "--no-gpg-sign", "-m", "base"],
      { env: BUILD_GIT_ENV },
    );
  });
}

/** Git's environment for the repositories built here: fixed identity, no user configuration. */
export const BUILD_GIT_ENV: Readonly<Record<string, string>> = {
  ...FIXTURE_COMMIT_ENV,
  GIT_CONFIG_GLOBAL: "/dev/null",
  GIT_CONFIG_NOSYSTEM: "1",
};

/**
 * A git repository at `target`, made by `build` in an empty staging folder beside it and renamed
 * into place, so processes building the same target at once all end with one whole repository;
 * an existing one is kept.
 */
export async function placedRepo(
  target: string,
  build: (staging: string) => Promise<void>,
): Promise<string> {
  if (await repoBuilt(target)) return target;
  const parent = target.slice(0, target.lastIndexOf("/"));
  await Deno.mkdir(parent, { recursive: true });
  const name = target.slice(target.lastIndexOf("/") + 1);
  const staging = await Deno.makeTempDir({ dir: parent, prefix: `.${name}-` });
  try {
    await build(staging);
    try {
      await Deno.rename(staging, target);
    } catch (error) {
      // Another process built it first: theirs is identical.
      if (!(await repoBuilt(target))) throw error;
      await Deno.remove(staging, { recursive: true });
    }
    return target;
  } catch (error) {
    await Deno.remove(staging, { recursive: true }).catch(() => {});
    throw error;
  }
}

/** Whether a whole repository is at `path` (one `placedRepo` built). */
export async function repoBuilt(path: string): Promise<boolean> {
  try {
    await Deno.stat(`${path}/.git/HEAD`);
    return true;
  } catch {
    return false;
  }
}

async function copyTree(from: string, to: string): Promise<void> {
  for await (const entry of Deno.readDir(from)) {
    const source = `${from}/${entry.name}`;
    const target = `${to}/${entry.name}`;
    if (entry.isDirectory) {
      await Deno.mkdir(target);
      await copyTree(source, target);
    } else if (entry.isFile) {
      await Deno.copyFile(source, target);
    }
  }
}
