/**
 * Turns in Deno KV. A turn is written as its token chunks, its record, its replay entry and the
 * new chain header in one atomic commit guarded by the header's versionstamp and the chain's
 * lease (which it deletes); chunks that do not fit that commit are written first under keys
 * nothing references yet, so a half-written turn is never visible. Read back: a chain's turn
 * records, its live turns, and their tokens.
 *
 * @module
 */
import type { ChainHeader, RouteSpan, TurnMessages, TurnRecord } from "../chain/records.ts";
import { dtypeBytes, type ExpertRows } from "../engine/mod.ts";
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
  readBytes,
  type Store,
} from "../kv/mod.ts";
import type { ReplayEntry } from "./session_store.ts";

/** Room left in a commit for the records and keys besides the chunks. */
const COMMIT_SLACK_BYTES = 32_768;
/** Chunks written in one commit at most (KV allows 1,000 mutations). */
const COMMIT_PIECES = 500;

/** A turn to commit, with the entries it was computed from. */
export interface TurnCommit {
  /** The chain header the turn extends, as read. */
  readonly chain: Deno.KvEntryMaybe<ChainHeader>;
  readonly header: ChainHeader;
  readonly turn: TurnRecord;
  readonly chunks: readonly Uint8Array[];
  /**
   * The turn's other blobs, each under its key prefix (its request's messages, its routed
   * experts): written with the tokens, under the same guarantees.
   */
  readonly blobs?: readonly {
    readonly prefix: Deno.KvKey;
    readonly chunks: readonly Uint8Array[];
  }[];
  /** The chain's lease as last renewed: the commit fails if it was lost, and releases it. */
  readonly lease?: Deno.KvEntry<Lease>;
  /** Counts the commits' retries. */
  readonly metrics?: GatewayMetrics;
}

/**
 * Commits a turn. Resolves to the new versionstamp of the chain header, or `null` when the
 * chain or its lease changed since they were read; nothing is left written then. Chunks that do
 * not fit the commit of the records are written first, under keys nothing references until the
 * records do, and deleted again when that commit fails.
 */
export async function commitTurn(kv: Store, turn: TurnCommit): Promise<string | null> {
  const { sessionId, id: chainId } = turn.header;
  const { index, rid } = turn.turn;
  const pieces: [Deno.KvKey, Uint8Array][] = turn.chunks.map((chunk, j) => [
    keys.turnChunk(sessionId, chainId, index, rid, j),
    chunk,
  ]);
  for (const blob of turn.blobs ?? []) {
    blob.chunks.forEach((chunk, j) => pieces.push([[...blob.prefix, j], chunk]));
  }
  const budget = KV_MAX_COMMIT_BYTES - COMMIT_SLACK_BYTES;
  // Early pieces go in their own commits; the last batch rides with the records.
  let first = 0;
  const ahead: Deno.KvKey[] = [];
  while (first < pieces.length) {
    let end = first;
    let bytes = 0;
    while (
      end < pieces.length && end - first < COMMIT_PIECES && bytes + pieces[end][1].length <= budget
    ) bytes += pieces[end++][1].length;
    if (end === pieces.length) break;
    const batch = pieces.slice(first, end);
    await commit(() => {
      const op = kv.atomic();
      for (const [key, chunk] of batch) op.set(key, chunk);
      return op;
    }, turn.metrics);
    ahead.push(...batch.map(([key]) => key));
    first = end;
  }
  const replay: ReplayEntry = { chainId, index, rid };
  const result = await commit(() => {
    const op = kv.atomic().check(turn.chain);
    if (turn.lease) op.check(turn.lease).delete(turn.lease.key);
    for (let j = first; j < pieces.length; j++) op.set(pieces[j][0], pieces[j][1]);
    return op.set(keys.turn(sessionId, chainId, index, rid), turn.turn)
      .set(keys.replay(sessionId, turn.turn.bodyDigest), replay)
      .set(keys.chain(sessionId, chainId), turn.header);
  }, turn.metrics);
  if (result.ok) return result.versionstamp;
  // Nothing references them: they go, so a lost commit leaves no blob of a turn that never was.
  for (let at = 0; at < ahead.length; at += COMMIT_PIECES) {
    const doomed = ahead.slice(at, at + COMMIT_PIECES);
    await commit(() => {
      const op = kv.atomic();
      for (const key of doomed) op.delete(key);
      return op;
    }).catch((error) => console.warn(`Cannot delete the chunks of turn ${rid}:`, error));
  }
  return null;
}

/** A turn's request messages as the chunks of the blob its record names. */
export function turnMessageChunks(messages: TurnMessages): Uint8Array[] {
  return blobChunks(new TextEncoder().encode(JSON.stringify(messages)));
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

/**
 * The own rows of routed experts a turn recorded (`span`: its record's routes, with its index and
 * rid), from its blob.
 *
 * @throws {Error} when the blob is shorter than its record says (a broken chain).
 */
export async function readTurnRoutes(
  kv: Store,
  sessionId: string,
  chainId: string,
  span: RouteSpan,
): Promise<ExpertRows> {
  const bytes = await readBytes(
    kv,
    keys.turnRoutes(sessionId, chainId, span.index, span.rid),
    span.chunks,
  );
  const length = span.rows * span.width;
  const size = dtypeBytes(span.dtype);
  if (bytes.length < length * size) {
    throw new Error(
      `Cannot read the routed experts of turn ${span.index} of chain "${chainId}": ${bytes.length} bytes, not ${
        length * size
      }`,
    );
  }
  // A copy, aligned for the typed array.
  const own = bytes.slice(0, length * size);
  const values = span.dtype === "uint8"
    ? own
    : span.dtype === "uint16"
    ? new Uint16Array(own.buffer, 0, length)
    : new Int32Array(own.buffer, 0, length);
  return { start: span.start, rows: span.rows, values };
}
