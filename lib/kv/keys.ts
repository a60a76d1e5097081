/**
 * Every Deno KV key the gateway writes, how to take one apart again, and the KV limits it works
 * within.
 *
 * @module
 */

/** Largest serialized value KV stores (bytes). */
export const KV_MAX_VALUE_BYTES = 65_536;
/** Most bytes one atomic commit may write. */
export const KV_MAX_COMMIT_BYTES = 819_200;
/** Most keys one `getMany` may read. */
export const KV_MAX_GET_MANY = 10;

/** Keys, built in one place so their layout is visible at a glance. */
export const keys = {
  /** A session's record. */
  session: (sessionId: string): Deno.KvKey => ["session", sessionId],
  /** A chain's header: its length, digest and status. */
  chain: (sessionId: string, chainId: string): Deno.KvKey => ["chain", sessionId, chainId],
  /** Prefix of all chain headers of a session. */
  chains: (sessionId: string): Deno.KvKey => ["chain", sessionId],
  /**
   * A turn's record (metadata, no tokens). The engine request id keeps a turn that a rewind
   * discarded next to the one that replaced it at the same index.
   */
  turn: (sessionId: string, chainId: string, index: number, rid: string): Deno.KvKey => [
    "turn",
    sessionId,
    chainId,
    index,
    rid,
  ],
  /** Prefix of all turn records of a chain, discarded ones included. */
  turns: (sessionId: string, chainId: string): Deno.KvKey => ["turn", sessionId, chainId],
  /**
   * One chunk of a turn's token blob. The engine request id keeps two attempts at the same turn
   * (one of which loses its commit) from writing each other's chunks.
   */
  turnChunk: (
    sessionId: string,
    chainId: string,
    index: number,
    rid: string,
    chunk: number,
  ): Deno.KvKey => ["turn_chunk", sessionId, chainId, index, rid, chunk],
  /** Prefix of all turn chunks of a chain, discarded turns' included. */
  chainChunks: (sessionId: string, chainId: string): Deno.KvKey => [
    "turn_chunk",
    sessionId,
    chainId,
  ],
  /** Prefix of all turn chunks of a session. */
  sessionChunks: (sessionId: string): Deno.KvKey => ["turn_chunk", sessionId],
  /**
   * Prefix of the blob of a turn's request messages, kept when its session records them; keyed
   * by rid like its tokens.
   */
  turnMessages: (sessionId: string, chainId: string, index: number, rid: string): Deno.KvKey => [
    "turn_messages",
    sessionId,
    chainId,
    index,
    rid,
  ],
  /** Prefix of every turn's request messages in a session. */
  sessionMessages: (sessionId: string): Deno.KvKey => ["turn_messages", sessionId],
  /**
   * Prefix of the blob of a turn's routed experts (R3), kept beside its tokens; keyed by rid like
   * them.
   */
  turnRoutes: (sessionId: string, chainId: string, index: number, rid: string): Deno.KvKey => [
    "turn_routes",
    sessionId,
    chainId,
    index,
    rid,
  ],
  /** Prefix of every turn's routed experts in a session. */
  sessionRoutes: (sessionId: string): Deno.KvKey => ["turn_routes", sessionId],
  /** Prefix of all turn records of a session. */
  sessionTurns: (sessionId: string): Deno.KvKey => ["turn", sessionId],
  /** The session's lock: held while a request is routed, and by close and delete. */
  lease: (sessionId: string): Deno.KvKey => ["lease", sessionId],
  /** A chain's lock: held while one of its turns generates and commits. */
  chainLease: (sessionId: string, chainId: string): Deno.KvKey => [
    "chain_lease",
    sessionId,
    chainId,
  ],
  /** Prefix of a session's chain locks. */
  chainLeases: (sessionId: string): Deno.KvKey => ["chain_lease", sessionId],
  /** Which turn answered a request body, so a retry of it is answered again. */
  replay: (sessionId: string, bodyDigest: string): Deno.KvKey => ["replay", sessionId, bodyDigest],
  /** Prefix of a session's replay entries. */
  replays: (sessionId: string): Deno.KvKey => ["replay", sessionId],
  /** How many times a recorded turn answered a retry of its request (a `Deno.KvU64`). */
  turnReplays: (sessionId: string, chainId: string, rid: string): Deno.KvKey => [
    "turn_replays",
    sessionId,
    chainId,
    rid,
  ],
  /** Prefix of a session's replay counts. */
  sessionReplays: (sessionId: string): Deno.KvKey => ["turn_replays", sessionId],
  /** Prefix of the replay counts of one chain of a session. */
  chainReplays: (sessionId: string, chainId: string): Deno.KvKey => [
    "turn_replays",
    sessionId,
    chainId,
  ],
  /** The chain of a sub-agent, by the client's agent id. */
  agent: (sessionId: string, agentId: string): Deno.KvKey => ["agent", sessionId, agentId],
  /** Prefix of a session's agent entries. */
  agents: (sessionId: string): Deno.KvKey => ["agent", sessionId],
  /** A session's reward (its score, and its payload or the blob that holds it). */
  reward: (sessionId: string): Deno.KvKey => ["reward", sessionId],
  /** Prefix of the chunks of one version of a session's reward blob. */
  rewardBlob: (sessionId: string, version: string): Deno.KvKey => [
    "reward_blob",
    sessionId,
    version,
  ],
  /** Prefix of every reward blob of a session. */
  rewardBlobs: (sessionId: string): Deno.KvKey => ["reward_blob", sessionId],
  /**
   * An image a session's turns showed a vision model: its media type and size; its bytes in
   * chunks under this key. By digest, so an image resent every turn is kept once per session.
   */
  image: (sessionId: string, digest: string): Deno.KvKey => ["image", sessionId, digest],
  /** Prefix of a session's images and their chunks. */
  sessionImages: (sessionId: string): Deno.KvKey => ["image", sessionId],
  /**
   * How many of a session's turns found the engine unavailable (a sum): what tells a rollout
   * that its agent gave up because of the engine, not of the model.
   */
  engineFailures: (sessionId: string): Deno.KvKey => ["engine_failures", sessionId],
  /** Prefix of all session records, for listing. */
  sessions: (): Deno.KvKey => ["session"],
  /** When a closed session is due for deletion. */
  expiry: (expiresAt: number, sessionId: string): Deno.KvKey => ["expiry", expiresAt, sessionId],
  /** Prefix of all expiry entries, in time order. */
  expiries: (): Deno.KvKey => ["expiry"],
  /** A rollout group: its settings and job ids. */
  rolloutGroup: (groupId: string): Deno.KvKey => ["rollout_group", groupId],
  /** A group in creation order, for listing the newest first. */
  rolloutGroupTime: (createdAt: number, groupId: string): Deno.KvKey => [
    "rollout_group_time",
    createdAt,
    groupId,
  ],
  /** Prefix of the groups in creation order. */
  rolloutGroupTimes: (): Deno.KvKey => ["rollout_group_time"],
  /** Prefix of the chunks of a group's task spec (a blob). */
  rolloutTask: (groupId: string): Deno.KvKey => ["rollout_task", groupId],
  /** Prefix of the chunks of the work tree a group keeps in the store (a git bundle). */
  rolloutTree: (groupId: string): Deno.KvKey => ["rollout_tree", groupId],
  /** A rollout job: its phase, attempts and outcome. */
  rolloutJob: (jobId: string): Deno.KvKey => ["rollout_job", jobId],
  /** Present while a job is not finished: what workers scan for work. */
  rolloutActive: (jobId: string): Deno.KvKey => ["rollout_active", jobId],
  /** Prefix of all unfinished jobs. */
  rolloutActives: (): Deno.KvKey => ["rollout_active"],
  /** The lock of the worker running a job. */
  rolloutLease: (jobId: string): Deno.KvKey => ["rollout_lease", jobId],
  /** Prefix of the chunks of one attempt's blob (`patch`, `reward`, `agent_log`). */
  rolloutBlob: (jobId: string, attempt: number, name: string): Deno.KvKey => [
    "rollout_blob",
    jobId,
    attempt,
    name,
  ],
  /** Prefix of every blob of one attempt of a job. */
  rolloutAttemptBlobs: (jobId: string, attempt: number): Deno.KvKey => [
    "rollout_blob",
    jobId,
    attempt,
  ],
  /** Prefix of every blob of a job. */
  rolloutBlobs: (jobId: string): Deno.KvKey => ["rollout_blob", jobId],
  /** When a finished job is due for deletion. */
  rolloutExpiry: (expiresAt: number, jobId: string): Deno.KvKey => [
    "rollout_expiry",
    expiresAt,
    jobId,
  ],
  /** Prefix of all job expiry entries, in time order. */
  rolloutExpiries: (): Deno.KvKey => ["rollout_expiry"],
  /** Retries a rollout group's jobs have spent of its `retry_budget` (a sum). */
  rolloutRetries: (groupId: string): Deno.KvKey => ["rollout_retries", groupId],
  /**
   * Until when no gateway process boots a sandbox of `scope` (a host's local sandboxes, or one
   * remote backend's): set when a boot fails, so a backend refusing boots (E2B's 429 in a spike)
   * is backed off from by every process at once.
   */
  rolloutBootBackoff: (scope: string): Deno.KvKey => ["rollout_boot_backoff", scope],
  /**
   * A verdict on a task kept for a while (`expireIn`): `base_run`, how its tests fared at its base
   * commit; `validation`, whether it is a task to train on. By digest of what decided it.
   */
  taskVerdict: (kind: string, digest: string): Deno.KvKey => ["task_verdict", kind, digest],
  /** The lease of the process reaching a task verdict. */
  taskVerdictLease: (kind: string, digest: string): Deno.KvKey => [
    "task_verdict_lease",
    kind,
    digest,
  ],
  /**
   * One of the boot slots of `scope` (a host's local sandboxes, or one remote backend's), shared
   * by every gateway process that boots there.
   */
  rolloutBootSlot: (scope: string, slot: number): Deno.KvKey => ["rollout_boot_slot", scope, slot],
  /** A gateway-wide secret shared by every process on this KV. */
  secret: (name: string): Deno.KvKey => ["secret", name],
  /** Never written: reading it proves the store answers (`GET /health/ready`). */
  healthProbe: (): Deno.KvKey => ["health_probe"],
  /** The last metrics snapshot of worker `worker` (0 when it serves alone) on host `host`. */
  metrics: (host: string, worker: number): Deno.KvKey => ["metrics", host, worker],
  /** Prefix of every worker's metrics snapshot. */
  metricsAll: (): Deno.KvKey => ["metrics"],
} as const;

/**
 * A key of `keys` taken apart: its family (`kind`, the key's first part) and its other parts by
 * name. The chunks of a blob (`reward_blob`, `rollout_task`, `rollout_tree`, `rollout_blob`) are
 * the blob's prefix and the chunk's position. `other` is a key no family of `keys` has.
 */
export type ParsedKey =
  | { readonly kind: "session"; readonly sessionId: string }
  | { readonly kind: "chain"; readonly sessionId: string; readonly chainId: string }
  | {
    readonly kind: "turn";
    readonly sessionId: string;
    readonly chainId: string;
    readonly index: number;
    readonly rid: string;
  }
  | {
    readonly kind: "turn_chunk";
    readonly sessionId: string;
    readonly chainId: string;
    readonly index: number;
    readonly rid: string;
    readonly chunk: number;
  }
  | {
    readonly kind: "turn_messages" | "turn_routes";
    readonly sessionId: string;
    readonly chainId: string;
    readonly index: number;
    readonly rid: string;
    readonly chunk: number;
  }
  | { readonly kind: "lease"; readonly sessionId: string }
  | { readonly kind: "chain_lease"; readonly sessionId: string; readonly chainId: string }
  | { readonly kind: "replay"; readonly sessionId: string; readonly bodyDigest: string }
  | {
    readonly kind: "turn_replays";
    readonly sessionId: string;
    readonly chainId: string;
    readonly rid: string;
  }
  | { readonly kind: "agent"; readonly sessionId: string; readonly agentId: string }
  | { readonly kind: "reward"; readonly sessionId: string }
  | {
    readonly kind: "reward_blob";
    readonly sessionId: string;
    readonly version: string;
    readonly chunk: number;
  }
  | {
    readonly kind: "image";
    readonly sessionId: string;
    readonly digest: string;
    /** The chunk's position; `null` for the image's header. */
    readonly chunk: number | null;
  }
  | { readonly kind: "engine_failures"; readonly sessionId: string }
  | { readonly kind: "rollout_retries"; readonly groupId: string }
  | { readonly kind: "rollout_boot_backoff"; readonly scope: string }
  | { readonly kind: "task_verdict"; readonly verdict: string; readonly digest: string }
  | { readonly kind: "task_verdict_lease"; readonly verdict: string; readonly digest: string }
  | { readonly kind: "expiry"; readonly expiresAt: number; readonly sessionId: string }
  | { readonly kind: "rollout_group"; readonly groupId: string }
  | { readonly kind: "rollout_group_time"; readonly createdAt: number; readonly groupId: string }
  | { readonly kind: "rollout_task"; readonly groupId: string; readonly chunk: number }
  | { readonly kind: "rollout_tree"; readonly groupId: string; readonly chunk: number }
  | { readonly kind: "rollout_job"; readonly jobId: string }
  | { readonly kind: "rollout_active"; readonly jobId: string }
  | { readonly kind: "rollout_lease"; readonly jobId: string }
  | {
    readonly kind: "rollout_blob";
    readonly jobId: string;
    readonly attempt: number;
    readonly name: string;
    readonly chunk: number;
  }
  | { readonly kind: "rollout_expiry"; readonly expiresAt: number; readonly jobId: string }
  | { readonly kind: "rollout_boot_slot"; readonly scope: string; readonly slot: number }
  | { readonly kind: "secret"; readonly name: string }
  | { readonly kind: "health_probe" }
  | { readonly kind: "metrics"; readonly host: string; readonly worker: number }
  | { readonly kind: "other"; readonly key: Deno.KvKey };

const str = (part: Deno.KvKeyPart | undefined): part is string => typeof part === "string";
const num = (part: Deno.KvKeyPart | undefined): part is number => typeof part === "number";

/**
 * Takes a key apart, so that no code outside `lib/kv` reads a key tuple by position.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { keys, parseKey } from "./keys.ts";
 * assert.deepEqual(parseKey(keys.turn("s1", "c0", 3, "rid")), {
 *   kind: "turn",
 *   sessionId: "s1",
 *   chainId: "c0",
 *   index: 3,
 *   rid: "rid",
 * });
 * assert.deepEqual(parseKey(["elsewhere", 1]), { kind: "other", key: ["elsewhere", 1] });
 * ```
 */
export function parseKey(key: Deno.KvKey): ParsedKey {
  const [family, a, b, c, d, e] = key;
  const n = key.length;
  switch (family) {
    case "session":
      if (n === 2 && str(a)) return { kind: "session", sessionId: a };
      break;
    case "chain":
      if (n === 3 && str(a) && str(b)) return { kind: "chain", sessionId: a, chainId: b };
      break;
    case "turn":
      if (n === 5 && str(a) && str(b) && num(c) && str(d)) {
        return { kind: "turn", sessionId: a, chainId: b, index: c, rid: d };
      }
      break;
    case "turn_chunk":
    case "turn_messages":
    case "turn_routes":
      if (n === 6 && str(a) && str(b) && num(c) && str(d) && num(e)) {
        return { kind: family, sessionId: a, chainId: b, index: c, rid: d, chunk: e };
      }
      break;
    case "lease":
      if (n === 2 && str(a)) return { kind: "lease", sessionId: a };
      break;
    case "chain_lease":
      if (n === 3 && str(a) && str(b)) return { kind: "chain_lease", sessionId: a, chainId: b };
      break;
    case "replay":
      if (n === 3 && str(a) && str(b)) return { kind: "replay", sessionId: a, bodyDigest: b };
      break;
    case "turn_replays":
      if (n === 4 && str(a) && str(b) && str(c)) {
        return { kind: "turn_replays", sessionId: a, chainId: b, rid: c };
      }
      break;
    case "agent":
      if (n === 3 && str(a) && str(b)) return { kind: "agent", sessionId: a, agentId: b };
      break;
    case "reward":
      if (n === 2 && str(a)) return { kind: "reward", sessionId: a };
      break;
    case "reward_blob":
      if (n === 4 && str(a) && str(b) && num(c)) {
        return { kind: "reward_blob", sessionId: a, version: b, chunk: c };
      }
      break;
    case "image":
      if (n === 3 && str(a) && str(b)) {
        return { kind: "image", sessionId: a, digest: b, chunk: null };
      }
      if (n === 4 && str(a) && str(b) && num(c)) {
        return { kind: "image", sessionId: a, digest: b, chunk: c };
      }
      break;
    case "engine_failures":
      if (n === 2 && str(a)) return { kind: "engine_failures", sessionId: a };
      break;
    case "rollout_retries":
      if (n === 2 && str(a)) return { kind: "rollout_retries", groupId: a };
      break;
    case "rollout_boot_backoff":
      if (n === 2 && str(a)) return { kind: "rollout_boot_backoff", scope: a };
      break;
    case "task_verdict":
      if (n === 3 && str(a) && str(b)) return { kind: "task_verdict", verdict: a, digest: b };
      break;
    case "task_verdict_lease":
      if (n === 3 && str(a) && str(b)) return { kind: "task_verdict_lease", verdict: a, digest: b };
      break;
    case "expiry":
      if (n === 3 && num(a) && str(b)) return { kind: "expiry", expiresAt: a, sessionId: b };
      break;
    case "rollout_group":
      if (n === 2 && str(a)) return { kind: "rollout_group", groupId: a };
      break;
    case "rollout_group_time":
      if (n === 3 && num(a) && str(b)) {
        return { kind: "rollout_group_time", createdAt: a, groupId: b };
      }
      break;
    case "rollout_task":
      if (n === 3 && str(a) && num(b)) return { kind: "rollout_task", groupId: a, chunk: b };
      break;
    case "rollout_tree":
      if (n === 3 && str(a) && num(b)) return { kind: "rollout_tree", groupId: a, chunk: b };
      break;
    case "rollout_job":
      if (n === 2 && str(a)) return { kind: "rollout_job", jobId: a };
      break;
    case "rollout_active":
      if (n === 2 && str(a)) return { kind: "rollout_active", jobId: a };
      break;
    case "rollout_lease":
      if (n === 2 && str(a)) return { kind: "rollout_lease", jobId: a };
      break;
    case "rollout_blob":
      if (n === 5 && str(a) && num(b) && str(c) && num(d)) {
        return { kind: "rollout_blob", jobId: a, attempt: b, name: c, chunk: d };
      }
      break;
    case "rollout_expiry":
      if (n === 3 && num(a) && str(b)) return { kind: "rollout_expiry", expiresAt: a, jobId: b };
      break;
    case "rollout_boot_slot":
      if (n === 3 && str(a) && num(b)) return { kind: "rollout_boot_slot", scope: a, slot: b };
      break;
    case "secret":
      if (n === 2 && str(a)) return { kind: "secret", name: a };
      break;
    case "health_probe":
      if (n === 1) return { kind: "health_probe" };
      break;
    case "metrics":
      if (n === 3 && str(a) && num(b)) return { kind: "metrics", host: a, worker: b };
      break;
  }
  return { kind: "other", key };
}
