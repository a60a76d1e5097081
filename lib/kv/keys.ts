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
  /** A turn's record (metadata, no tokens). */
  turn: (sessionId: string, chainId: string, index: number): Deno.KvKey => [
    "turn",
    sessionId,
    chainId,
    index,
  ],
  /** Prefix of all turn records of a chain. */
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
  /** A gateway-wide secret shared by every process on this KV. */
  secret: (name: string): Deno.KvKey => ["secret", name],
} as const;
