/**
 * The stored shapes of a session: its record and its reward. The session layer builds and reads
 * them; `session_store.ts` and `reward_store.ts` keep them in KV.
 *
 * @module
 */
import type { RewardAllocation } from "../config/mod.ts";

/** The trainer's verdict on an episode: a numeric `score` and whatever evidence comes with it. */
export interface RewardPayload {
  readonly score: number;
  readonly [key: string]: unknown;
}

/**
 * An agent episode: its secret's digest and how it stands. Everything that grows with the
 * episode lives under keys of its own (chain headers, agents, turns, a large reward), so this
 * record stays small whatever the client sends.
 */
export interface SessionRecord {
  readonly id: string;
  /** SHA-256 (hex) of the session's bearer token; the token itself is never stored. */
  readonly tokenDigest: string;
  /** `open` takes turns; `closed` is frozen and deleted after the retention. */
  readonly status: "open" | "closed";
  readonly createdAt: number;
  /** When the session was closed; `null` while open. */
  readonly closedAt: number | null;
  /** When a closed session is deleted; `null` while open. */
  readonly expiresAt: number | null;
  /**
   * How a closed session ended: `completed` (closed by its trainer or its rollout), or
   * `aborted` (its rollout was cancelled, timed out or lost its worker). Absent while open.
   */
  readonly closedAs?: "completed" | "aborted";
  /** The trainer's metadata (bounded: `MAX_METADATA_BYTES`). */
  readonly metadata: Record<string, unknown>;
  /** How the reward is shared among the session's segments; `null` for the gateway's default. */
  readonly allocation: RewardAllocation | null;
  /**
   * Chains registered so far. Registering one rewrites the record with this count raised, so a
   * registration decided from an older record fails its check.
   */
  readonly chainCount: number;
  /** The main conversation's chain: where a request without an agent id goes first. */
  readonly mainChain: string;
  /** Opened by an unknown token on first use (`DEV_OPEN_SESSIONS`). */
  readonly dev: boolean;
  /**
   * Each turn keeps its request messages beside its tokens (`record_messages`), for trainers that
   * read them back; absent on records written before the option existed.
   */
  readonly recordMessages?: boolean;
}

/** A session record with its reward read back: what views and exports show. */
export type RewardedSession = SessionRecord & { readonly reward: RewardPayload | null };
