/**
 * The work tree a group keeps in the store (a Harbor task's `environment/`), on this host: its
 * git bundle read from the store and unpacked under the cache folder on first use, where the
 * submitting host built it already. Any host runs any group's jobs.
 *
 * @module
 */
import {
  repoBuilt,
  storedTreeDigest,
  storedTreePath,
  type Task,
  unbundledRepo,
} from "../evaluate/mod.ts";
import { RepoError } from "../sandbox/mod.ts";
import type { Store } from "../kv/mod.ts";
import { getRolloutGroup, readGroupTree } from "./rollout_store.ts";

/** Unpacks under way in this process, by target folder: one store read each. */
const unpacking = new Map<string, Promise<string>>();

/**
 * `task` with a `repo` that names its group's stored tree (`tree:<digest>`) replaced by that
 * tree's repository on this host; any other task as it is.
 *
 * @throws {RepoError} when the group keeps no such tree, or its bundle is not the commit named.
 */
export async function withLocalTree(
  kv: Store,
  groupId: string,
  task: Task,
  cacheDir: string,
): Promise<Task> {
  const digest = storedTreeDigest(task.repo);
  if (digest === null) return task;
  const target = storedTreePath(cacheDir, digest);
  let path = unpacking.get(target);
  if (!path) {
    path = unpack(kv, groupId, digest, target);
    unpacking.set(target, path);
    path.finally(() => unpacking.delete(target)).catch(() => {});
  }
  return { ...task, repo: await path };
}

async function unpack(
  kv: Store,
  groupId: string,
  digest: string,
  target: string,
): Promise<string> {
  // Built here before (or by this host's submission): no store read.
  if (await repoBuilt(target)) return target;
  const group = await getRolloutGroup(kv, groupId);
  if (group?.tree?.digest !== digest) {
    throw new RepoError(`Rollout group "${groupId}" keeps no work tree ${digest}`);
  }
  const bundle = await readGroupTree(kv, group);
  return await unbundledRepo(target, bundle!, group.tree.commit);
}
