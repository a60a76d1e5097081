/**
 * Sessions and chains in Deno KV: session records, chain headers, their registration and
 * reopening (each one commit checked against what routing read), replay entries and counts.
 * Turns are `turn_store.ts`'s.
 *
 * @module
 */
import type { ChainHeader } from "../chain/records.ts";
import type { GatewayMetrics } from "../metrics/mod.ts";
import { commit, keys, listPage, parseKey, type Store, type StoreAtomic } from "../kv/mod.ts";
import type { SessionRecord } from "./records.ts";

/** Which turn answered a request body. */
export interface ReplayEntry {
  readonly chainId: string;
  readonly index: number;
  readonly rid: string;
}

/** Deletions per commit when a session is removed (KV allows 1 000 mutations). */
const DELETE_BATCH = 500;

/** Stores a new session; false when the id is taken. */
export async function createSession(kv: Store, session: SessionRecord): Promise<boolean> {
  const key = keys.session(session.id);
  const result = await commit(() =>
    kv.atomic().check({ key, versionstamp: null }).set(key, session)
  );
  return result.ok;
}

/** A session's record and versionstamp (`value: null` when there is none). */
export function getSession(
  kv: Store,
  sessionId: string,
): Promise<Deno.KvEntryMaybe<SessionRecord>> {
  return kv.get<SessionRecord>(keys.session(sessionId));
}

/**
 * Rewrites a session record if it has not changed since `entry` was read, keeping the expiry
 * index in step. Resolves to false when it had changed.
 */
export async function updateSession(
  kv: Store,
  entry: Deno.KvEntry<SessionRecord>,
  next: SessionRecord,
): Promise<boolean> {
  const result = await commit(() => {
    const op = kv.atomic().check(entry).set(keys.session(next.id), next);
    if (entry.value.expiresAt !== null && entry.value.expiresAt !== next.expiresAt) {
      op.delete(keys.expiry(entry.value.expiresAt, next.id));
    }
    if (next.expiresAt !== null) op.set(keys.expiry(next.expiresAt, next.id), next.id);
    return op;
  });
  return result.ok;
}

/**
 * A page of session records in id order, and the cursor of the next page (`null` at the end).
 *
 * @throws {InvalidCursorError} for a cursor KV cannot read.
 */
export async function listSessions(
  kv: Store,
  options: { limit: number; cursor?: string },
): Promise<{ sessions: SessionRecord[]; cursor: string | null }> {
  const page = await listPage<SessionRecord>(kv, keys.sessions(), options);
  return { sessions: page.entries.map((entry) => entry.value), cursor: page.cursor };
}

/** Closed sessions whose retention ended at or before `now`, by their expiry entries. */
export async function expiredSessions(
  kv: Store,
  now: number,
  limit = 100,
): Promise<{ sessionId: string; key: Deno.KvKey }[]> {
  const out: { sessionId: string; key: Deno.KvKey }[] = [];
  const iter = kv.list<string>({ prefix: keys.expiries(), end: keys.expiry(now + 1, "") }, {
    limit,
  });
  for await (const entry of iter) out.push({ sessionId: entry.value, key: entry.key });
  return out;
}

/**
 * Deletes a session and everything recorded in it. The session record goes first, so the
 * session is gone for every reader at once; the rest follows in batches.
 */
export async function deleteSession(kv: Store, sessionId: string): Promise<boolean> {
  const entry = await getSession(kv, sessionId);
  if (!entry.value) return false;
  const removed = await commit(() => {
    const op = kv.atomic().check(entry).delete(keys.session(sessionId));
    if (entry.value.expiresAt !== null) op.delete(keys.expiry(entry.value.expiresAt, sessionId));
    return op.delete(keys.lease(sessionId)).delete(keys.reward(sessionId))
      .delete(keys.engineFailures(sessionId));
  });
  if (!removed.ok) return false;
  const prefixes = [
    keys.chainLeases(sessionId),
    keys.agents(sessionId),
    keys.rewardBlobs(sessionId),
    keys.chains(sessionId),
    keys.sessionTurns(sessionId),
    keys.sessionChunks(sessionId),
    keys.sessionMessages(sessionId),
    keys.sessionRoutes(sessionId),
    keys.replays(sessionId),
    keys.sessionReplays(sessionId),
    keys.sessionImages(sessionId),
  ];
  for (const prefix of prefixes) {
    let batch: Deno.KvKey[] = [];
    const flush = async () => {
      const doomed = batch;
      batch = [];
      await commit(() => {
        const op = kv.atomic();
        for (const key of doomed) op.delete(key);
        return op;
      });
    };
    for await (const item of kv.list({ prefix }, { batchSize: DELETE_BATCH })) {
      batch.push(item.key);
      if (batch.length >= DELETE_BATCH) await flush();
    }
    if (batch.length > 0) await flush();
  }
  return true;
}

/**
 * Counts one more answer of a recorded turn to a retry of its request: a sum, checked against the
 * session's record so that no count outlives a deleted session. A record rewritten meanwhile (a
 * reward, a new chain) is read again, a few times.
 */
export async function countReplay(
  kv: Store,
  sessionId: string,
  chainId: string,
  rid: string,
): Promise<void> {
  for (let tries = 0; tries < 5; tries++) {
    const session = await getSession(kv, sessionId);
    if (!session.value) return; // deleted meanwhile: its counts went with it
    // Through `commit`: processes sharing the KV file make a commit with a check meet a lock.
    const key = keys.turnReplays(sessionId, chainId, rid);
    if ((await commit(() => kv.atomic().check(session).sum(key, 1n))).ok) return;
  }
}

/**
 * How many times each recorded turn of a session (or of its chain `chainId` alone) answered a
 * retry, by `chainId` then `rid`.
 */
export async function readReplayCounts(
  kv: Store,
  sessionId: string,
  chainId?: string,
): Promise<Map<string, Map<string, number>>> {
  const counts = new Map<string, Map<string, number>>();
  const prefix = chainId === undefined
    ? keys.sessionReplays(sessionId)
    : keys.chainReplays(sessionId, chainId);
  for await (const entry of kv.list<Deno.KvU64>({ prefix })) {
    const key = parseKey(entry.key);
    if (key.kind !== "turn_replays") continue;
    const chain = counts.get(key.chainId) ?? new Map<string, number>();
    chain.set(key.rid, Number(entry.value.value));
    counts.set(key.chainId, chain);
  }
  return counts;
}

/** A chain's header and versionstamp. */
export function getChain(
  kv: Store,
  sessionId: string,
  chainId: string,
): Promise<Deno.KvEntryMaybe<ChainHeader>> {
  return kv.get<ChainHeader>(keys.chain(sessionId, chainId));
}

/** Every chain header of a session, in key order. */
export async function listChains(kv: Store, sessionId: string): Promise<ChainHeader[]> {
  return (await listChainEntries(kv, sessionId)).map((entry) => entry.value);
}

/** Every chain header of a session with its versionstamp, in the order the chains started. */
export async function listChainEntries(
  kv: Store,
  sessionId: string,
): Promise<Deno.KvEntry<ChainHeader>[]> {
  const out: Deno.KvEntry<ChainHeader>[] = [];
  for await (const entry of kv.list<ChainHeader>({ prefix: keys.chains(sessionId) })) {
    out.push(entry);
  }
  return out.sort((a, b) =>
    a.value.createdAt - b.value.createdAt || chainNumber(a.value.id) - chainNumber(b.value.id)
  );
}

/** The number in a chain id (`c12` → 12): ids are handed out in increasing order. */
function chainNumber(chainId: string): number {
  return Number(chainId.slice(1));
}

/** The chain a sub-agent's requests go to, by the client's agent id; `null` for a new agent. */
export async function getAgentChain(
  kv: Store,
  sessionId: string,
  agentId: string,
): Promise<string | null> {
  return (await kv.get<string>(keys.agent(sessionId, agentId))).value;
}

/** The turn that answered a request body, if one did. */
export async function getReplay(
  kv: Store,
  sessionId: string,
  bodyDigest: string,
): Promise<ReplayEntry | null> {
  return (await kv.get<ReplayEntry>(keys.replay(sessionId, bodyDigest))).value;
}

/** A record as it was read: the value and its versionstamp, which a commit checks. */
export interface ReadRecord<T> {
  readonly record: T;
  readonly versionstamp: string;
}

/** A chain header to write over the version it was read at. */
export interface HeaderUpdate {
  readonly header: ChainHeader;
  readonly versionstamp: string;
}

/** A new chain to register: the session's new record, its empty header, the chain it replaces. */
export interface ChainRegistration {
  readonly session: ReadRecord<SessionRecord>;
  readonly next: SessionRecord;
  readonly header: ChainHeader;
  /** The client's agent id whose requests go to this chain from now on. */
  readonly agentId?: string | null;
  /** The chain this one replaces, marked wiped in the same commit. */
  readonly retire?: HeaderUpdate | null;
  /** Counts the commit's retries. */
  readonly metrics?: GatewayMetrics;
}

/**
 * Registers a new chain with its empty header, guarded by the session record it was decided
 * from. Resolves to the header's versionstamp, or `null` when the session or the replaced
 * chain changed meanwhile.
 */
export async function registerChain(
  kv: Store,
  registration: ChainRegistration,
): Promise<string | null> {
  const { sessionId, id } = registration.header;
  const key = keys.chain(sessionId, id);
  const result = await commit(() => {
    const op = kv.atomic()
      .check({ key: keys.session(sessionId), versionstamp: registration.session.versionstamp })
      .check({ key, versionstamp: null })
      .set(keys.session(sessionId), registration.next)
      .set(key, registration.header);
    if (registration.agentId) op.set(keys.agent(sessionId, registration.agentId), id);
    if (registration.retire) updateHeader(op, registration.retire);
    return op;
  }, registration.metrics);
  return result.ok ? result.versionstamp : null;
}

/** A replaced chain made current again, and the chain that had replaced it. */
export interface ChainReopening {
  readonly session: ReadRecord<SessionRecord>;
  /** The session's new record (its main chain switched back), or `null` to leave it. */
  readonly next: SessionRecord | null;
  /** The reopened chain's header (no longer wiped), over the version it was read at. */
  readonly chain: HeaderUpdate;
  /** The agent id whose requests go to the reopened chain again, if it has one. */
  readonly agentId: string | null;
  /** The chain that had replaced it, now wiped. */
  readonly retire: HeaderUpdate | null;
  /** Counts the commit's retries. */
  readonly metrics?: GatewayMetrics;
}

/**
 * Reopens a chain in one commit guarded by every record it was decided from. Resolves to the
 * reopened header's versionstamp, or `null` when any of them changed meanwhile.
 */
export async function reopenChain(kv: Store, reopening: ChainReopening): Promise<string | null> {
  const { sessionId, id } = reopening.chain.header;
  const result = await commit(() => {
    const op = kv.atomic().check({
      key: keys.session(sessionId),
      versionstamp: reopening.session.versionstamp,
    });
    if (reopening.next) op.set(keys.session(sessionId), reopening.next);
    if (reopening.agentId) op.set(keys.agent(sessionId, reopening.agentId), id);
    updateHeader(op, reopening.chain);
    if (reopening.retire) updateHeader(op, reopening.retire);
    return op;
  }, reopening.metrics);
  return result.ok ? result.versionstamp : null;
}

/** Checks a header's version and writes its new value. */
function updateHeader(op: StoreAtomic, update: HeaderUpdate): void {
  const key = keys.chain(update.header.sessionId, update.header.id);
  op.check({ key, versionstamp: update.versionstamp }).set(key, update.header);
}

/** Counts a turn of the session that found the engine unavailable. */
export async function noteEngineFailure(kv: Store, sessionId: string): Promise<void> {
  await commit(() => kv.atomic().sum(keys.engineFailures(sessionId), 1n));
}

/** How many of the session's turns found the engine unavailable. */
export async function engineFailures(kv: Store, sessionId: string): Promise<number> {
  const entry = await kv.get<Deno.KvU64>(keys.engineFailures(sessionId));
  return entry.value === null ? 0 : Number(entry.value.value);
}
