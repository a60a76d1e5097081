/**
 * A session's life after it opens: the trainer reads it, rewards it, closes it (frozen; deleted
 * after the retention), or deletes it. Closing and deleting take the session's lease, so a turn
 * in flight finishes first and nothing is recorded after.
 *
 * @module
 */
import {
  type ChainHeader,
  chainRef,
  type ChainRole,
  type SegmentKind,
  segmentKind,
} from "../chain/mod.ts";
import {
  acquireLease,
  anyLeaseHeld,
  keys,
  type LeaseOptions,
  LeaseTimeoutError,
  type Store,
} from "../kv/mod.ts";
import {
  deleteSession,
  expiredSessions,
  getSession,
  listChains,
  listSessions,
  updateSession,
} from "./session_store.ts";
import { getRewardRecord, putReward, readReward } from "./reward_store.ts";
import {
  jsonBytes,
  LimitError,
  MAX_REWARD_BYTES,
  metadataText,
  REWARD_INLINE_BYTES,
} from "../limits/mod.ts";
import { pollUntil } from "../timing/mod.ts";
import { SessionNotFoundError } from "./errors.ts";
import type { RewardPayload, SessionRecord } from "./records.ts";
import { SESSION_ID } from "./session.ts";

/** What the lifecycle operations need. */
export interface LifecycleDeps {
  readonly kv: Store;
  /** Lease lifetime and wait; with `metrics`, its waits and commit retries are counted. */
  readonly lease: Pick<LeaseOptions, "ttlMs" | "waitMs" | "metrics">;
  readonly holder: string;
  /** How long a closed session is kept. */
  readonly retentionMs: number;
  readonly now?: () => number;
  /**
   * Told of chains that can no longer continue (their session closed or deleted): the engine
   * lets their placement and engine sessions go.
   */
  readonly released?: (chains: readonly string[]) => void;
  /**
   * Told of a session that takes no more turns (closed or deleted), with its chains' ids: what
   * this process keeps for its turns (cached chains, its conversations' identities) goes, so the
   * caches hold sessions that still run.
   */
  readonly ended?: (sessionId: string, chainIds: readonly string[]) => void;
}

/** A session at a glance: its record's facts, its reward and its chain tree; times in epoch ms. */
export interface SessionSummary {
  readonly id: string;
  readonly status: "open" | "closed";
  readonly createdAt: number;
  readonly closedAt: number | null;
  /** `completed` or `aborted` once closed (see {@linkcode closeSession}); `null` while open. */
  readonly closedAs: "completed" | "aborted" | null;
  /** When the closed session is deleted; `null` while open. */
  readonly expiresAt: number | null;
  readonly metadata: Record<string, unknown>;
  /** Each turn keeps its request messages (the raw export shows them). */
  readonly recordMessages: boolean;
  readonly reward: RewardPayload | null;
  /**
   * The chain tree, in the order the chains started: which chain dispatched (or replaced) which,
   * when each was wiped, with token counts. `final` is the current main conversation.
   */
  readonly chains: ChainSummary[];
}

/** One chain of a session at a glance (from its head). */
export interface ChainSummary {
  readonly id: string;
  readonly kind: SegmentKind;
  readonly role: ChainRole;
  /** The chain that dispatched this sub-agent, or the conversation this one replaced. */
  readonly parent: string | null;
  /** The id of the Agent/Task tool call that dispatched it. */
  readonly dispatch: string | null;
  readonly agentId: string | null;
  /** Chains whose parent this is. */
  readonly children: string[];
  readonly model: string;
  readonly turns: number;
  /** Every turn's delta, output and closing tokens. */
  readonly tokens: number;
  readonly createdAt: number;
  /** When a later conversation of the same agent replaced this one; `null` while current. */
  readonly wipedAt: number | null;
}

/** A closed session past its retention is gone, even before the sweeper deletes it. */
export function isExpired(session: SessionRecord, now: number): boolean {
  return session.expiresAt !== null && session.expiresAt <= now;
}

/**
 * The session's record, if it exists and has not expired.
 *
 * @throws {SessionNotFoundError}
 */
export async function liveSession(
  kv: Store,
  sessionId: string,
  now = Date.now(),
): Promise<Deno.KvEntry<SessionRecord>> {
  // An id no session can have is not looked up (KV refuses keys over 2 KiB).
  const entry = SESSION_ID.test(sessionId) ? await getSession(kv, sessionId) : null;
  if (!entry?.value) throw new SessionNotFoundError(sessionId);
  return liveEntry(entry as Deno.KvEntry<SessionRecord>, now);
}

/**
 * `entry`, read a moment ago, if its session has not expired.
 *
 * @throws {SessionNotFoundError}
 */
export function liveEntry(
  entry: Deno.KvEntry<SessionRecord>,
  now = Date.now(),
): Deno.KvEntry<SessionRecord> {
  if (isExpired(entry.value, now)) throw new SessionNotFoundError(entry.value.id);
  return entry;
}

/**
 * The summary of a live session.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { buildDeps } from "../../functions/_deps.ts";
 * import { anthropicTurnInput } from "../anthropic/mod.ts";
 * import { resolveConfig } from "../config/mod.ts";
 * import { openSession, readSessionSummary, startTurn } from "./mod.ts";
 * // A session of one turn, answered by the built-in scripted engine.
 * const deps = await buildDeps(resolveConfig({ KV_PATH: ":memory:" }));
 * const { session: { id } } = await openSession(deps.kv);
 * const messages = [{ role: "user" as const, content: "hi" }];
 * const context = { sessionId: id, signingSecret: "secret" };
 * const input = anthropicTurnInput({ model: "m", max_tokens: 64, messages }, context);
 * await (await startTurn(deps, input)).completion;
 * const summary = await readSessionSummary(deps.kv, id);
 * assert.deepEqual(summary.chains.map((chain) => [chain.kind, chain.turns]), [["final", 1]]);
 * await deps.close();
 * ```
 * @throws {SessionNotFoundError}
 */
export async function readSessionSummary(
  kv: Store,
  sessionId: string,
): Promise<SessionSummary> {
  const session = (await liveSession(kv, sessionId)).value;
  return summarize(session, await readReward(kv, sessionId), await listChains(kv, sessionId));
}

/** `chains` in the order they started (see `listChains`). */
function summarize(
  session: SessionRecord,
  reward: RewardPayload | null,
  chains: readonly ChainHeader[],
): SessionSummary {
  return {
    id: session.id,
    status: session.status,
    createdAt: session.createdAt,
    closedAt: session.closedAt,
    closedAs: session.closedAs ?? null,
    expiresAt: session.expiresAt,
    metadata: session.metadata,
    recordMessages: session.recordMessages === true,
    reward,
    chains: chains.map((chain): ChainSummary => ({
      id: chain.id,
      kind: segmentKind(chain),
      role: chain.role,
      parent: chain.parent,
      dispatch: chain.dispatch,
      agentId: chain.agentId,
      children: chains.filter((other) => other.parent === chain.id).map((other) => other.id),
      model: chain.model,
      turns: chain.turnCount,
      tokens: chain.tokenCount,
      createdAt: chain.createdAt,
      wipedAt: chain.wipedAt,
    })),
  };
}

/** Which sessions a listing shows. */
export interface SessionFilter {
  readonly status?: "open" | "closed";
  /** Metadata values each listed session must have, by key (compared as `metadataText`). */
  readonly metadata?: ReadonlyMap<string, string>;
  /** Least reward score (inclusive); a session with no reward does not match. */
  readonly minScore?: number;
  /** Greatest reward score (inclusive); a session with no reward does not match. */
  readonly maxScore?: number;
}

/**
 * A page of sessions matching `filter`, in id order, and the cursor of the next page. A page
 * may hold fewer than `limit` sessions when the filter skips some; `cursor` is `null` at the
 * end.
 */
export async function listSessionSummaries(
  kv: Store,
  filter: SessionFilter,
  page: { limit: number; cursor?: string },
  now = Date.now(),
): Promise<{ sessions: SessionSummary[]; cursor: string | null }> {
  const { sessions, cursor } = await listSessions(kv, page);
  const matching = sessions.filter((session) =>
    !isExpired(session, now) &&
    (filter.status === undefined || session.status === filter.status) &&
    [...(filter.metadata ?? [])].every(([key, value]) =>
      Object.hasOwn(session.metadata, key) && metadataText(session.metadata[key]) === value
    )
  );
  const scored = filter.minScore !== undefined || filter.maxScore !== undefined;
  const summaries: SessionSummary[] = [];
  for (const session of matching) {
    const reward = await readReward(kv, session.id);
    if (scored) {
      if (reward === null) continue;
      if (filter.minScore !== undefined && !(reward.score >= filter.minScore)) continue;
      if (filter.maxScore !== undefined && !(reward.score <= filter.maxScore)) continue;
    }
    summaries.push(summarize(session, reward, await listChains(kv, session.id)));
  }
  return { sessions: summaries, cursor };
}

/** Rewrites the session with `change` applied, retrying while it changes under us. */
async function modify(
  kv: Store,
  sessionId: string,
  change: (session: SessionRecord) => SessionRecord,
  now: number,
): Promise<SessionRecord> {
  for (;;) {
    const entry = await liveSession(kv, sessionId, now);
    const next = change(entry.value);
    if (await updateSession(kv, entry, next)) return next;
  }
}

/**
 * Records the trainer's reward: a score and any evidence, up to `MAX_REWARD_BYTES` of JSON. It
 * may be set again; the last one counts.
 *
 * @throws {SessionNotFoundError}; {LimitError} for a payload over the bound.
 */
export async function setReward(
  deps: LifecycleDeps,
  sessionId: string,
  reward: RewardPayload,
): Promise<SessionSummary> {
  const bytes = jsonBytes(reward);
  if (bytes > MAX_REWARD_BYTES) {
    throw new LimitError("reward", `${bytes} bytes of JSON, at most ${MAX_REWARD_BYTES}`);
  }
  for (;;) {
    const session = await liveSession(deps.kv, sessionId, now(deps));
    const previous = await getRewardRecord(deps.kv, sessionId);
    if (await putReward(deps.kv, session, previous, reward, REWARD_INLINE_BYTES, now(deps))) break;
  }
  return await readSessionSummary(deps.kv, sessionId);
}

/**
 * Runs `action` holding the session's lease once no chain of the session has a turn in flight:
 * no request can be routed meanwhile, and none is generating.
 */
async function underLease<T>(
  deps: LifecycleDeps,
  sessionId: string,
  purpose: string,
  action: () => Promise<T>,
): Promise<T> {
  await liveSession(deps.kv, sessionId, now(deps));
  const lease = await acquireLease(
    deps.kv,
    keys.lease(sessionId),
    `${deps.holder}/${purpose}`,
    deps.lease,
  );
  try {
    const idle = await pollUntil(
      async () => !(await anyLeaseHeld(deps.kv, keys.chainLeases(sessionId), now(deps))),
      { timeoutMs: deps.lease.waitMs, intervalMs: 20, now: () => now(deps) },
    );
    if (!idle) throw new LeaseTimeoutError("a turn in flight", deps.lease.waitMs);
    return await action();
  } finally {
    await lease.release();
  }
}

/**
 * Freezes the session once any turn in flight has finished; it is deleted after the retention.
 * `as: "aborted"` marks a session whose episode was cut short (its rollout was cancelled, timed
 * out or lost its worker). Closing a closed session changes nothing.
 *
 * @throws {SessionNotFoundError}, {LeaseTimeoutError} when a turn holds the session too long.
 */
export async function closeSession(
  deps: LifecycleDeps,
  sessionId: string,
  options: { readonly as?: "completed" | "aborted" } = {},
): Promise<SessionSummary> {
  await underLease(deps, sessionId, "close", () => {
    const closedAt = now(deps);
    return modify(deps.kv, sessionId, (session) =>
      session.status === "closed" ? session : {
        ...session,
        status: "closed",
        closedAt,
        expiresAt: closedAt + deps.retentionMs,
        closedAs: options.as ?? "completed",
      }, closedAt);
  });
  const summary = await readSessionSummary(deps.kv, sessionId);
  deps.released?.(summary.chains.map((chain) => chainRef(sessionId, chain.id)));
  deps.ended?.(sessionId, summary.chains.map((chain) => chain.id));
  return summary;
}

/**
 * Deletes the session and everything recorded in it, once any turn in flight has finished.
 *
 * @throws {SessionNotFoundError}, {LeaseTimeoutError}
 */
export async function removeSession(deps: LifecycleDeps, sessionId: string): Promise<void> {
  await underLease(deps, sessionId, "delete", async () => {
    const chains = deps.released || deps.ended
      ? (await readSessionSummary(deps.kv, sessionId).catch(() => null))?.chains ?? []
      : [];
    if (!(await deleteSession(deps.kv, sessionId))) throw new SessionNotFoundError(sessionId);
    deps.released?.(chains.map((chain) => chainRef(sessionId, chain.id)));
    deps.ended?.(sessionId, chains.map((chain) => chain.id));
  });
}

/** Deletes closed sessions past their retention; returns how many went. */
export async function sweepExpiredSessions(kv: Store, at = Date.now()): Promise<number> {
  let removed = 0;
  for (const { sessionId, key } of await expiredSessions(kv, at)) {
    const entry = await getSession(kv, sessionId);
    if (!entry.value) await kv.delete(key); // an entry its session outlived
    else if (isExpired(entry.value, at) && await deleteSession(kv, sessionId)) removed++;
  }
  return removed;
}

function now(deps: LifecycleDeps): number {
  return (deps.now ?? Date.now)();
}
