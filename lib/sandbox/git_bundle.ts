/**
 * A task's repository packed on the gateway's machine as a git bundle holding its base commit
 * and history, so a remote sandbox gets the exact commit with no network of its own.
 *
 * @module
 */
import { hostCommand, HostCommandError } from "./host_command.ts";
import { RepoError } from "./sandbox.ts";

/** Git on the host ignores the operator's own configuration and never prompts. */
export const HOST_GIT_ENV: Readonly<Record<string, string>> = {
  GIT_TERMINAL_PROMPT: "0",
  GIT_CONFIG_NOSYSTEM: "1",
  GIT_CONFIG_GLOBAL: "/dev/null",
};

/** A bundle on the host and the full commit id it checks out at. */
export interface Bundle {
  readonly path: string;
  readonly commit: string;
}

/**
 * Bundles `commit` of `source` (a host path or git URL) into a new file under `dir`: a
 * temporary bare repository fetches the commit as `refs/heads/base`, then `git bundle` packs it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { fixtureRepo } from "../evaluate/mod.ts";
 * import { bundleCommit } from "./git_bundle.ts";
 * const tmp = await Deno.makeTempDir();
 * const repo = await fixtureRepo("python_unittest", tmp);
 * const { commit } = await bundleCommit(repo, "1bdf00de", tmp);
 * assert.equal(commit, "1bdf00de100a0db07eae541924db3a45524b6156"); // the full id
 * await Deno.remove(tmp, { recursive: true });
 * ```
 * @throws {RepoError} when the source or the commit cannot be read.
 */
export async function bundleCommit(source: string, commit: string, dir: string): Promise<Bundle> {
  const git = (args: string[]) => hostCommand("git", args, { env: HOST_GIT_ENV });
  const bare = await Deno.makeTempDir({ dir, prefix: "bundle-" });
  try {
    let wanted = commit;
    if (source.startsWith("/")) {
      // A short id or a branch name is resolved where it is known; a fetch needs a full id or a ref.
      wanted = (await git(["-C", source, "rev-parse", "--verify", "--quiet", `${commit}^{commit}`])
        .catch((error) => {
          throw new RepoError(`Commit "${commit}" not found in "${source}": ${describe(error)}`, {
            cause: error,
          });
        })).trim();
    }
    await git(["init", "--quiet", "--bare", bare]);
    try {
      await git([
        "-C",
        bare,
        "fetch",
        "--quiet",
        "--no-tags",
        "--",
        source,
        `${wanted}:refs/heads/base`,
      ]);
    } catch (error) {
      throw new RepoError(`Cannot fetch "${commit}" from "${source}": ${describe(error)}`, {
        cause: error,
      });
    }
    const full = (await git(["-C", bare, "rev-parse", "refs/heads/base"])).trim();
    const path = `${bare}.bundle`;
    await git(["-C", bare, "bundle", "create", "--quiet", path, "refs/heads/base"]);
    return { path, commit: full };
  } finally {
    await Deno.remove(bare, { recursive: true }).catch(() => {});
  }
}

/** The last lines of a failed git command's stderr. */
export function describe(error: unknown): string {
  return error instanceof HostCommandError
    ? error.stderr.trim().split("\n").slice(-3).join(" ").replace(/\s+/g, " ").replace(/\.$/, "")
    : String(error);
}
