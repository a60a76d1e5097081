/**
 * Turns in Deno KV. A turn is written as its token chunks, its record, its replay entry and the
 * new chain header in one atomic commit guarded by the header's versionstamp and the chain's
 * lease (which it deletes); chunks that do not fit that commit are written first under keys
 * nothing references yet, so a half-written turn is never visible. Read back: a chain's turn
 * records, its live turns, and their tokens.
 *
 * @module
 */
import type { ChainHeader, TurnMessages, TurnRecord } from "../chain/records.ts";
import type { GatewayMetrics } from "../metrics/mod.ts";
import {
  blobChunks,
  commit,
  type DecodedTurnTokens,
  decodeTurnTokens,
  keys,
  KV_MAX_COMMIT_BYTES,
  KV_MAX_GET_MANY,
  type Lease,
  readBlob,
  type Store,
  writeChunks,
} from "../kv/mod.ts";
import type { ReplayEntry } from "./session_store.ts";

/** Room left in a commit for the records and keys besides the chunks. */
const COMMIT_SLACK_BYTES = 32_768;

/** A turn to commit, with the entries it was computed from. */
export interface TurnCommit {
  /** The chain header the turn extends, as read. */
  readonly chain: Deno.KvEntryMaybe<ChainHeader>;
  readonly header: ChainHeader;
  readonly turn: TurnRecord;
  readonly chunks: readonly Uint8Array[];
  /** The chain's lease as last renewed: the commit fails if it was lost, and releases it. */
  readonly lease?: Deno.KvEntry<Lease>;
  /** Counts the commits' retries. */
  readonly metrics?: GatewayMetrics;
}

/**
 * Commits a turn. Resolves to the new versionstamp of the chain header, or `null` when the
 * chain or its lease changed since they were read; nothing visible is written then.
 */
export async function commitTurn(kv: Store, turn: TurnCommit): Promise<string | null> {
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
    }, turn.metrics);
    first = end;
  }
  const replay: ReplayEntry = { chainId, index, rid };
  const result = await commit(() => {
    const op = kv.atomic().check(turn.chain);
    if (turn.lease) op.check(turn.lease).delete(turn.lease.key);
    for (let j = first; j < turn.chunks.length; j++) {
      op.set(keys.turnChunk(sessionId, chainId, index, rid, j), turn.chunks[j]);
    }
    return op.set(keys.turn(sessionId, chainId, index, rid), turn.turn)
      .set(keys.replay(sessionId, turn.turn.bodyDigest), replay)
      .set(keys.chain(sessionId, chainId), turn.header);
  }, turn.metrics);
  return result.ok ? result.versionstamp : null;
}

/** A turn's request messages as the chunks of the blob its record names. */
export function turnMessageChunks(messages: TurnMessages): Uint8Array[] {
  return blobChunks(new TextEncoder().encode(JSON.stringify(messages)));
}

/**
 * Writes a turn's request messages (`turnMessageChunks`) before its commit, under its rid (a
 * turn that loses its commit leaves them to the session's deletion).
 */
export function writeTurnMessages(
  kv: Store,
  turn: { sessionId: string; chainId: string; index: number; rid: string },
  chunks: readonly Uint8Array[],
): Promise<void> {
  return writeChunks(
    kv,
    keys.turnMessages(turn.sessionId, turn.chainId, turn.index, turn.rid),
    chunks,
  );
}

/** A turn's request messages, or `null` when its session did not record them. */
export async function readTurnMessages(
  kv: Store,
  sessionId: string,
  chainId: string,
  turn: TurnRecord,
): Promise<TurnMessages | null> {
  if (!turn.messageChunks) return null;
  return await readBlob<TurnMessages>(
    kv,
    keys.turnMessages(sessionId, chainId, turn.index, turn.rid),
    turn.messageChunks,
  );
}

/** Every turn record of a chain, discarded ones included, by index then rid. */
export async function readAllTurns(
  kv: Store,
  sessionId: string,
  chainId: string,
): Promise<TurnRecord[]> {
  const out: TurnRecord[] = [];
  const iter = kv.list<TurnRecord>({ prefix: keys.turns(sessionId, chainId) }, { batchSize: 500 });
  for await (const entry of iter) out.push(entry.value);
  return out;
}

/**
 * The live turns of a chain, first to last: from the header's last turn back through the
 * parent links.
 *
 * @throws {Error} when a linked turn is missing (a broken chain).
 */
export async function readLiveTurns(kv: Store, header: ChainHeader): Promise<TurnRecord[]> {
  return liveTurns(await readAllTurns(kv, header.sessionId, header.id), header);
}

/** The live turns among `all`, first to last. */
export function liveTurns(all: readonly TurnRecord[], header: ChainHeader): TurnRecord[] {
  const byRid = new Map(all.map((record) => [record.rid, record]));
  const out: TurnRecord[] = [];
  for (let rid = header.lastRid; rid !== null;) {
    const record = byRid.get(rid);
    if (!record) {
      throw new Error(
        `Cannot read chain "${header.id}" of session "${header.sessionId}": turn ${rid} is missing`,
      );
    }
    out.push(record);
    rid = record.parent;
  }
  out.reverse();
  if (out.length !== header.turnCount) {
    throw new Error(
      `Cannot read chain "${header.id}" of session "${header.sessionId}": ${out.length} of ${header.turnCount} turns linked`,
    );
  }
  return out;
}

/**
 * The tokens of `turns` (turns of one chain), in their order, read with one listing of the
 * chain's chunks (a page per 500 chunks) instead of a read per turn: what a process that has not
 * cached the chain pays for its history, whatever its number of turns.
 *
 * @throws {Error} when a turn's chunk is missing.
 */
export async function readChainTokens(
  kv: Store,
  sessionId: string,
  chainId: string,
  turns: readonly TurnRecord[],
): Promise<DecodedTurnTokens[]> {
  const wanted = new Map(turns.map((turn) => [`${turn.index}/${turn.rid}`, [] as Uint8Array[]]));
  const listing = kv.list<Uint8Array>({ prefix: keys.chainChunks(sessionId, chainId) }, {
    batchSize: 500,
  });
  for await (const entry of listing) {
    const [, , , index, rid] = entry.key;
    wanted.get(`${String(index)}/${String(rid)}`)?.push(entry.value);
  }
  return turns.map((turn) => {
    const chunks = wanted.get(`${turn.index}/${turn.rid}`)!;
    if (chunks.length !== turn.chunks) {
      throw new Error(
        `Cannot read turn ${turn.index} of chain "${chainId}": ${chunks.length} of ${turn.chunks} chunks`,
      );
    }
    return decodeTurnTokens(chunks);
  });
}

/** The tokens of one turn. */
export async function readTurnTokens(
  kv: Store,
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
