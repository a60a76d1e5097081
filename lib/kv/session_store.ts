/**
 * Sessions, chains and turns in Deno KV. A turn is written as its token chunks, its record
 * and the new chain header in one atomic commit guarded by the header's versionstamp; chunks
 * that do not fit that commit are written first under keys nothing references yet, so a
 * half-written turn is never visible.
 *
 * @module
 */
import { commit } from "./atomic.ts";
import { type DecodedTurnTokens, decodeTurnTokens } from "./chunked.ts";
import { keys, KV_MAX_COMMIT_BYTES, KV_MAX_GET_MANY } from "./keys.ts";
import type { ChainHeader, SessionRecord, TurnRecord } from "./records.ts";

/** Room left in a commit for the records and keys besides the chunks. */
const COMMIT_SLACK_BYTES = 32_768;

/** Stores a new session; false when the id is taken. */
export async function createSession(kv: Deno.Kv, session: SessionRecord): Promise<boolean> {
  const key = keys.session(session.id);
  const result = await commit(() =>
    kv.atomic().check({ key, versionstamp: null }).set(key, session)
  );
  return result.ok;
}

/** A session's record and versionstamp (`value: null` when there is none). */
export function getSession(
  kv: Deno.Kv,
  sessionId: string,
): Promise<Deno.KvEntryMaybe<SessionRecord>> {
  return kv.get<SessionRecord>(keys.session(sessionId));
}

/** A chain's header and versionstamp. */
export function getChain(
  kv: Deno.Kv,
  sessionId: string,
  chainId: string,
): Promise<Deno.KvEntryMaybe<ChainHeader>> {
  return kv.get<ChainHeader>(keys.chain(sessionId, chainId));
}

/** Every chain header of a session, in key order. */
export async function listChains(kv: Deno.Kv, sessionId: string): Promise<ChainHeader[]> {
  const out: ChainHeader[] = [];
  for await (const entry of kv.list<ChainHeader>({ prefix: keys.chains(sessionId) })) {
    out.push(entry.value);
  }
  return out;
}

/** A turn to commit, with the entries it was computed from. */
export interface TurnCommit {
  /** The chain header the turn extends, as read (`value: null` for a new chain). */
  readonly chain: Deno.KvEntryMaybe<ChainHeader>;
  readonly header: ChainHeader;
  readonly turn: TurnRecord;
  readonly chunks: readonly Uint8Array[];
  /** Session changes committed with the turn (a new main chain), guarded by the entry read. */
  readonly session?: { readonly entry: Deno.KvEntry<SessionRecord>; readonly next: SessionRecord };
  /** Another chain's header rewritten with the turn (the main chain it replaced). */
  readonly retire?: { readonly entry: Deno.KvEntry<ChainHeader>; readonly next: ChainHeader };
}

/**
 * Commits a turn. Resolves to the new versionstamp of the chain header, or `null` when the
 * chain (or the session) changed since it was read, in which case nothing visible was written.
 */
export async function commitTurn(kv: Deno.Kv, turn: TurnCommit): Promise<string | null> {
  const { sessionId, id: chainId } = turn.header;
  const { index, rid } = turn.turn;
  const budget = KV_MAX_COMMIT_BYTES - COMMIT_SLACK_BYTES;
  // Early chunks go in their own commits; the last batch rides with the records.
  let first = 0;
  while (first < turn.chunks.length) {
    let end = first;
    let bytes = 0;
    while (end < turn.chunks.length && bytes + turn.chunks[end].length <= budget) {
      bytes += turn.chunks[end++].length;
    }
    if (end === turn.chunks.length) break;
    const batch = turn.chunks.slice(first, end);
    const from = first;
    await commit(() => {
      const op = kv.atomic();
      batch.forEach((chunk, j) =>
        op.set(keys.turnChunk(sessionId, chainId, index, rid, from + j), chunk)
      );
      return op;
    });
    first = end;
  }
  const result = await commit(() => {
    const op = kv.atomic().check(turn.chain);
    if (turn.session) op.check(turn.session.entry).set(keys.session(sessionId), turn.session.next);
    if (turn.retire) {
      op.check(turn.retire.entry).set(keys.chain(sessionId, turn.retire.next.id), turn.retire.next);
    }
    for (let j = first; j < turn.chunks.length; j++) {
      op.set(keys.turnChunk(sessionId, chainId, index, rid, j), turn.chunks[j]);
    }
    return op.set(keys.turn(sessionId, chainId, index), turn.turn).set(
      keys.chain(sessionId, chainId),
      turn.header,
    );
  });
  return result.ok ? result.versionstamp : null;
}

/** The records of a chain's first `count` turns, in order. */
export async function readTurns(
  kv: Deno.Kv,
  sessionId: string,
  chainId: string,
  count: number,
): Promise<TurnRecord[]> {
  const out: TurnRecord[] = [];
  const iter = kv.list<TurnRecord>({ prefix: keys.turns(sessionId, chainId) }, { batchSize: 500 });
  for await (const entry of iter) {
    if (entry.value.index >= count) break;
    out.push(entry.value);
  }
  if (out.length !== count) {
    throw new Error(
      `Cannot read chain "${chainId}" of session "${sessionId}": ${out.length} of ${count} turns found`,
    );
  }
  return out;
}

/** The tokens of one turn. */
export async function readTurnTokens(
  kv: Deno.Kv,
  sessionId: string,
  chainId: string,
  turn: TurnRecord,
): Promise<DecodedTurnTokens> {
  const chunks: Uint8Array[] = [];
  for (let j = 0; j < turn.chunks; j += KV_MAX_GET_MANY) {
    const batch = Array.from(
      { length: Math.min(KV_MAX_GET_MANY, turn.chunks - j) },
      (_, k) => keys.turnChunk(sessionId, chainId, turn.index, turn.rid, j + k),
    );
    for (const entry of await kv.getMany<Uint8Array[]>(batch)) {
      if (entry.value === null) {
        throw new Error(
          `Cannot read turn ${turn.index} of chain "${chainId}": chunk ${
            String(entry.key.at(-1))
          } is missing`,
        );
      }
      chunks.push(entry.value);
    }
  }
  return decodeTurnTokens(chunks);
}
