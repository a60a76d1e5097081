/**
 * A task's repository checked where the gateway can check it without a sandbox, before anything
 * is queued: a fixture that exists, a path on this machine that is a git repository holding the
 * base commit. What only a sandbox can reach (a git URL, an image's folder) is left to the first
 * job, which fails `repo_unavailable` if it cannot.
 *
 * @module
 */
import { HOST_GIT_ENV, hostCommand, RepoError } from "../sandbox/mod.ts";
import { repoSource } from "./evaluate.ts";
import type { Task } from "./task.ts";

/**
 * Throws what `/evaluate` would answer for `task`'s repository, when it can be told here.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { checkTaskRepo } from "./repo_check.ts";
 * import { TaskSchema } from "./task.ts";
 * const cacheDir = await Deno.makeTempDir();
 * const task = TaskSchema.parse({ repo: "/nowhere", base_commit: "HEAD", eval_cmd: "true" });
 * await assert.rejects(checkTaskRepo(task, cacheDir), /is not a git repository on this machine/);
 * await Deno.remove(cacheDir, { recursive: true });
 * ```
 * @throws {RepoError} naming the repository and what is wrong with it.
 */
export async function checkTaskRepo(task: Task, cacheDir: string): Promise<void> {
  const source = await repoSource(task, cacheDir); // an unknown fixture throws here
  if (source.kind !== "path") return;
  const git = (args: string[]) =>
    hostCommand("git", ["-C", source.path, ...args], { env: HOST_GIT_ENV });
  try {
    await git(["rev-parse", "--git-dir"]);
  } catch (error) {
    throw new RepoError(`Repository "${task.repo}" is not a git repository on this machine`, {
      cause: error,
    });
  }
  try {
    await git([
      "rev-parse",
      "--verify",
      "--quiet",
      "--end-of-options",
      `${task.base_commit}^{commit}`,
    ]);
  } catch (error) {
    throw new RepoError(`Commit "${task.base_commit}" is not in "${task.repo}"`, { cause: error });
  }
}
