/**
 * Rollout groups and jobs in Deno KV. A group is written with its jobs in one commit (its task
 * spec first, as a blob); a job changes only by compare-and-set on its record, and leaves the
 * index of unfinished jobs in the same commit that finishes it.
 *
 * @module
 */
import {
  commit,
  deleteBlob,
  keys,
  KV_MAX_GET_MANY,
  listPage,
  parseKey,
  readBlob,
  readBytes,
  type Store,
  writeBlob,
  writeBytes,
} from "../kv/mod.ts";
import type {
  FinalPhase,
  GroupTreeRecord,
  RolloutGroupRecord,
  RolloutJobRecord,
  RolloutPhase,
} from "./records.ts";

/**
 * Which phases take a job out of the index of unfinished jobs: the final ones, checked against
 * the rollout layer's `FinalPhase` so the two cannot drift apart.
 */
const LEAVES_ACTIVE_INDEX: { readonly [P in RolloutPhase]: P extends FinalPhase ? true : false } = {
  queued: false,
  booting: false,
  agent: false,
  evaluating: false,
  done: true,
  failed: true,
  aborted: true,
};

/** A work tree a group is written with: its digest, its commit and its git bundle. */
export interface GroupTree {
  readonly digest: string;
  readonly commit: string;
  readonly bundle: Uint8Array;
}

/**
 * Writes a group, its task, the work tree it keeps (when given) and its queued jobs.
 *
 * @throws {Error} when the group id is taken.
 */
export async function createRolloutGroup(
  kv: Store,
  group: Omit<RolloutGroupRecord, "taskChunks" | "tree">,
  task: unknown,
  jobs: readonly RolloutJobRecord[],
  tree?: GroupTree,
): Promise<RolloutGroupRecord> {
  // The blobs first: a reader never sees a group whose task or tree is missing.
  const treeRecord: GroupTreeRecord | undefined = tree && {
    digest: tree.digest,
    commit: tree.commit,
    chunks: await writeBytes(kv, keys.rolloutTree(group.id), tree.bundle),
    bytes: tree.bundle.length,
  };
  const taskChunks = await writeBlob(kv, keys.rolloutTask(group.id), task);
  const record: RolloutGroupRecord = {
    ...group,
    taskChunks,
    ...(treeRecord && { tree: treeRecord }),
  };
  const result = await commit(() => {
    const op = kv.atomic()
      .check({ key: keys.rolloutGroup(group.id), versionstamp: null })
      .set(keys.rolloutGroup(group.id), record)
      .set(keys.rolloutGroupTime(group.createdAt, group.id), true);
    // One check, on the group: job ids are random (96 bits), and KV allows few checks per
    // commit (100 in a file, 10 on a denokv server) where a group holds up to 256 jobs.
    for (const job of jobs) {
      op.set(keys.rolloutJob(job.id), job)
        .set(keys.rolloutActive(job.id), job.createdAt);
    }
    return op;
  });
  if (!result.ok) throw new Error(`Rollout group "${group.id}" exists already`);
  return record;
}

/** A job's entry (value `null` when unknown). */
export function getRolloutJob(
  kv: Store,
  jobId: string,
): Promise<Deno.KvEntryMaybe<RolloutJobRecord>> {
  return kv.get<RolloutJobRecord>(keys.rolloutJob(jobId));
}

/** A group's record, or `null`. */
export async function getRolloutGroup(
  kv: Store,
  groupId: string,
): Promise<RolloutGroupRecord | null> {
  return (await kv.get<RolloutGroupRecord>(keys.rolloutGroup(groupId))).value;
}

/** Entries of `keys`, read `KV_MAX_GET_MANY` at a time, in order (`value` null when absent). */
async function getManyBatched<T>(
  kv: Store,
  keyList: readonly Deno.KvKey[],
): Promise<Deno.KvEntryMaybe<T>[]> {
  const entries: Deno.KvEntryMaybe<T>[] = [];
  for (let i = 0; i < keyList.length; i += KV_MAX_GET_MANY) {
    entries.push(...await kv.getMany<T[]>(keyList.slice(i, i + KV_MAX_GET_MANY)));
  }
  return entries;
}

/** A page of groups, the newest first, and the cursor of the next page (`null` at the end). */
export interface RolloutGroupPage {
  readonly groups: RolloutGroupRecord[];
  readonly cursor: string | null;
}

/**
 * The groups, the newest first, `limit` at a time from `cursor` (a previous page's). Groups made
 * before the creation-time index existed are not listed (they go with their retention).
 *
 * @throws {InvalidCursorError} for a cursor KV cannot read.
 */
export async function listRolloutGroups(
  kv: Store,
  options: { readonly limit: number; readonly cursor?: string },
): Promise<RolloutGroupPage> {
  const page = await listPage<true>(kv, keys.rolloutGroupTimes(), { ...options, reverse: true });
  const ids = page.entries.flatMap((entry) => {
    const key = parseKey(entry.key);
    return key.kind === "rollout_group_time" ? [key.groupId] : [];
  });
  const groups = (await getManyBatched<RolloutGroupRecord>(kv, ids.map(keys.rolloutGroup)))
    .flatMap((entry) => entry.value ? [entry.value] : []);
  return { groups, cursor: page.cursor };
}

/** The job records of a group, in its order (a job past its expiry is left out). */
export async function listGroupJobs(
  kv: Store,
  group: RolloutGroupRecord,
): Promise<RolloutJobRecord[]> {
  return (await getManyBatched<RolloutJobRecord>(kv, group.jobs.map(keys.rolloutJob)))
    .flatMap((entry) => entry.value ? [entry.value] : []);
}

/** A group's task spec. */
export function readRolloutTask<T>(kv: Store, group: RolloutGroupRecord): Promise<T> {
  return readBlob<T>(kv, keys.rolloutTask(group.id), group.taskChunks);
}

/** The git bundle of the work tree a group keeps, or `null` when it keeps none. */
export async function readGroupTree(
  kv: Store,
  group: RolloutGroupRecord,
): Promise<Uint8Array | null> {
  if (group.tree === undefined) return null;
  return await readBytes(kv, keys.rolloutTree(group.id), group.tree.chunks);
}

/**
 * Replaces a job's record if it is still `entry`; a final phase also leaves the index of
 * unfinished jobs and, with `expiresAt`, enters the expiry index. Resolves to the new entry, or
 * `null` when someone changed it first.
 */
export async function updateRolloutJob(
  kv: Store,
  entry: Deno.KvEntry<RolloutJobRecord>,
  next: RolloutJobRecord,
): Promise<Deno.KvEntry<RolloutJobRecord> | null> {
  const result = await commit(() => {
    const op = kv.atomic().check(entry).set(entry.key, next);
    if (LEAVES_ACTIVE_INDEX[next.phase]) {
      op.delete(keys.rolloutActive(next.id));
      if (next.expiresAt) op.set(keys.rolloutExpiry(next.expiresAt, next.id), true);
    }
    return op;
  });
  return result.ok ? { key: entry.key, value: next, versionstamp: result.versionstamp } : null;
}

/**
 * Applies `change` to the job's current record until it commits; resolves to the new entry,
 * or `null` when `change` returns `null` (nothing to do) or the job is unknown.
 */
export async function modifyRolloutJob(
  kv: Store,
  jobId: string,
  change: (job: RolloutJobRecord) => RolloutJobRecord | null,
): Promise<Deno.KvEntry<RolloutJobRecord> | null> {
  for (;;) {
    const entry = await getRolloutJob(kv, jobId);
    if (entry.value === null) return null;
    const next = change(entry.value);
    if (next === null) return null;
    const written = await updateRolloutJob(kv, entry as Deno.KvEntry<RolloutJobRecord>, next);
    if (written) return written;
  }
}

/** Ids of the jobs not yet finished, oldest first. */
export async function listActiveRolloutJobs(kv: Store): Promise<string[]> {
  const found: { id: string; at: number }[] = [];
  for await (const entry of kv.list<number>({ prefix: keys.rolloutActives() })) {
    const key = parseKey(entry.key);
    if (key.kind === "rollout_active") found.push({ id: key.jobId, at: entry.value });
  }
  return found.sort((a, b) => a.at - b.at).map((job) => job.id);
}

/** Writes one attempt's blob; returns its chunk count. */
export function writeRolloutBlob(
  kv: Store,
  jobId: string,
  attempt: number,
  name: string,
  value: unknown,
): Promise<number> {
  return writeBlob(kv, keys.rolloutBlob(jobId, attempt, name), value);
}

/** One attempt's blob, or `null` when the job's record names none. */
export async function readRolloutBlob<T>(
  kv: Store,
  job: RolloutJobRecord,
  name: string,
): Promise<T | null> {
  const chunks = job.blobs[name];
  if (chunks === undefined) return null;
  return await readBlob<T>(kv, keys.rolloutBlob(job.id, job.attempt, name), chunks);
}

/**
 * Deletes finished jobs past their expiry, with their blobs, and the groups left with no job;
 * returns how many jobs went. Every process may run it: it is idempotent.
 */
export async function sweepExpiredRollouts(kv: Store, at = Date.now()): Promise<number> {
  let deleted = 0;
  const groups = new Set<string>();
  const due = kv.list<true>({
    start: keys.rolloutExpiries(),
    end: [...keys.rolloutExpiries(), at + 1],
  });
  for await (const entry of due) {
    const key = parseKey(entry.key);
    if (key.kind !== "rollout_expiry") continue;
    const { jobId } = key;
    const job = (await getRolloutJob(kv, jobId)).value;
    if (job) groups.add(job.groupId);
    await deleteBlob(kv, keys.rolloutBlobs(jobId));
    await commit(() => kv.atomic().delete(keys.rolloutJob(jobId)).delete(entry.key));
    deleted++;
  }
  for (const groupId of groups) {
    const group = await getRolloutGroup(kv, groupId);
    if (!group) continue;
    if ((await listGroupJobs(kv, group)).length === 0) {
      await deleteBlob(kv, keys.rolloutTask(groupId));
      await deleteBlob(kv, keys.rolloutTree(groupId));
      await commit(() =>
        kv.atomic()
          .delete(keys.rolloutGroup(groupId))
          .delete(keys.rolloutGroupTime(group.createdAt, groupId))
          .delete(keys.rolloutRetries(groupId))
      );
    }
  }
  return deleted;
}
