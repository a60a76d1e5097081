/**
 * Every Deno KV key the gateway writes, and the KV limits it works within.
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
  /** Prefix of all turn chunks of a session. */
  sessionChunks: (sessionId: string): Deno.KvKey => ["turn_chunk", sessionId],
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
  /** Prefix of all session records, for listing. */
  sessions: (): Deno.KvKey => ["session"],
  /** When a closed session is due for deletion. */
  expiry: (expiresAt: number, sessionId: string): Deno.KvKey => ["expiry", expiresAt, sessionId],
  /** Prefix of all expiry entries, in time order. */
  expiries: (): Deno.KvKey => ["expiry"],
  /** A rollout group: its settings and job ids. */
  rolloutGroup: (groupId: string): Deno.KvKey => ["rollout_group", groupId],
  /** Prefix of the chunks of a group's task spec (a blob). */
  rolloutTask: (groupId: string): Deno.KvKey => ["rollout_task", groupId],
  /** A rollout job: one sample's phase, attempts and outcome. */
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
  /** One of the sandbox boot slots every gateway process on this KV shares. */
  rolloutBootSlot: (slot: number): Deno.KvKey => ["rollout_boot_slot", slot],
  /** A gateway-wide secret shared by every process on this KV. */
  secret: (name: string): Deno.KvKey => ["secret", name],
} as const;
