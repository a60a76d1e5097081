/**
 * Shapes that exist only in storage: a reward's blob layout and a replay entry. The records of
 * the domain (session, chain header, turn, rollout job) are defined in their own modules
 * (`lib/session`, `lib/chain`, `lib/rollout`); this layer only stores them.
 *
 * @module
 */
import type { RewardPayload } from "../session/records.ts";

/**
 * A session's reward as stored under its own key: small payloads inline, larger ones as a
 * chunked blob under a version of their own (written before this record names it).
 */
export interface RewardRecord {
  readonly score: number;
  /** The whole payload, when it is small enough to sit here; `null` when it is a blob. */
  readonly payload: RewardPayload | null;
  /** The blob holding the payload: its version and chunk count; `null` when inline. */
  readonly blob: { readonly version: string; readonly chunks: number } | null;
  readonly setAt: number;
}

/** Which turn answered a request body. */
export interface ReplayEntry {
  readonly chainId: string;
  readonly index: number;
  readonly rid: string;
}
