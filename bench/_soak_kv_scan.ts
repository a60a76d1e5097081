/**
 * The soak's scan of the KV file once every gateway has stopped, for **half-written** entries:
 * anything of a session that is not part of a consistent turn —
 *
 * - a chain whose live turns do not link from its header's last turn back to the first, whose
 *   count or token total differs from the header's, or whose turns' prompt lengths do not add up;
 * - a turn record whose chain header is missing, or whose chunks are missing, do not decode, or
 *   hold other lengths than the record says;
 * - a chunk no turn record owns (nothing is in flight once the gateways have stopped);
 * - a replay entry naming no turn, or a turn of another request body;
 * - an agent entry naming no chain; any entry of a session whose record is gone.
 *
 * Leases a killed process left behind are counted, not faulted: they run out by design.
 *
 * @module
 */
import type { ChainHeader, TurnRecord } from "../lib/chain/mod.ts";
import { decodeTurnTokens, keys, parseKey, type Store } from "../lib/kv/mod.ts";
import { liveTurns, type ReplayEntry } from "../lib/session/mod.ts";

/** What the scan found. */
export interface KvScan {
  readonly sessions: number;
  readonly chains: number;
  /** Turn records, live and discarded. */
  readonly turns: number;
  readonly chunks: number;
  readonly replays: number;
  /** Session and chain leases left by killed processes (they expire by themselves). */
  readonly staleLeases: number;
  /** Entries that are not part of a consistent turn. */
  readonly halfWritten: number;
  /** The first of them, described. */
  readonly problems: readonly string[];
}

/** Scans every session in `kv`. */
export async function scanKv(kv: Store): Promise<KvScan> {
  const problems: string[] = [];
  let halfWritten = 0;
  const fault = (problem: string) => {
    halfWritten++;
    if (problems.length < 20) problems.push(problem);
  };
  const sessions = new Set<string>();
  for await (const entry of kv.list({ prefix: keys.sessions() })) {
    const key = parseKey(entry.key);
    if (key.kind === "session") sessions.add(key.sessionId);
  }

  // Entries of the per-session families whose session is gone are orphans.
  const mentioned = new Set<string>();
  let staleLeases = 0;
  for await (const entry of kv.list({ prefix: [] })) {
    const key = parseKey(entry.key);
    switch (key.kind) {
      case "chain":
      case "turn":
      case "turn_chunk":
      case "replay":
      case "agent":
        mentioned.add(key.sessionId);
        if (!sessions.has(key.sessionId)) {
          fault(`${JSON.stringify(entry.key)}: its session is gone`);
        }
        break;
      case "lease":
      case "chain_lease":
        staleLeases++;
        break;
    }
  }

  const totals = { chains: 0, turns: 0, chunks: 0, replays: 0 };
  for (const sessionId of sessions) {
    if (!mentioned.has(sessionId)) continue;
    const counts = await scanSession(kv, sessionId, fault);
    for (const name of Object.keys(totals) as (keyof typeof totals)[]) totals[name] += counts[name];
  }
  return { sessions: sessions.size, ...totals, staleLeases, halfWritten, problems };
}

async function scanSession(kv: Store, sessionId: string, fault: (problem: string) => void) {
  const headers = new Map<string, ChainHeader>();
  for await (const entry of kv.list<ChainHeader>({ prefix: keys.chains(sessionId) })) {
    headers.set(entry.value.id, entry.value);
  }
  const records: TurnRecord[] = [];
  const recordChain = new Map<TurnRecord, string>();
  for await (const entry of kv.list<TurnRecord>({ prefix: keys.sessionTurns(sessionId) })) {
    const key = parseKey(entry.key);
    if (key.kind !== "turn") {
      fault(`${JSON.stringify(entry.key)}: not a turn record's key`);
      continue;
    }
    const { chainId } = key;
    records.push(entry.value);
    recordChain.set(entry.value, chainId);
    if (!headers.has(chainId)) fault(`${JSON.stringify(entry.key)}: its chain header is missing`);
  }
  const chunks = new Map<string, Uint8Array>();
  for await (const entry of kv.list<Uint8Array>({ prefix: keys.sessionChunks(sessionId) })) {
    chunks.set(JSON.stringify(entry.key), entry.value);
  }
  const chunkCount = chunks.size;

  for (const record of records) {
    const chainId = recordChain.get(record)!;
    const label = `${sessionId}/${chainId} turn ${record.index} (${record.rid})`;
    const parts: Uint8Array[] = [];
    for (let j = 0; j < record.chunks; j++) {
      const key = JSON.stringify(keys.turnChunk(sessionId, chainId, record.index, record.rid, j));
      const chunk = chunks.get(key);
      chunks.delete(key); // owned
      if (chunk) parts.push(chunk);
    }
    if (parts.length !== record.chunks) {
      fault(`${label}: ${parts.length} of ${record.chunks} chunks`);
      continue;
    }
    try {
      const tokens = decodeTurnTokens(parts);
      if (
        tokens.delta.length !== record.deltaLen || tokens.output.length !== record.outputLen ||
        tokens.closing.length !== record.closingLen
      ) {
        fault(`${label}: its chunks hold other lengths than its record`);
      }
    } catch (error) {
      fault(`${label}: ${(error as Error).message}`);
    }
  }
  for (const key of chunks.keys()) fault(`${key}: a chunk of no turn record`);

  for (const header of headers.values()) {
    const label = `${sessionId}/${header.id}`;
    try {
      const live = liveTurns(records.filter((r) => recordChain.get(r) === header.id), header);
      let tokens = 0;
      for (const [position, turn] of live.entries()) {
        if (turn.index !== position) {
          fault(`${label}: live turn ${position} has index ${turn.index}`);
        }
        if (turn.inputLen !== tokens + turn.deltaLen) {
          fault(
            `${label} turn ${turn.index}: inputLen ${turn.inputLen}, chain ${
              tokens + turn.deltaLen
            }`,
          );
        }
        tokens += turn.deltaLen + turn.outputLen + turn.closingLen;
      }
      if (live.length > 0 && tokens !== header.tokenCount) {
        fault(`${label}: its turns hold ${tokens} tokens, its header says ${header.tokenCount}`);
      }
    } catch (error) {
      fault(`${label}: ${(error as Error).message}`);
    }
  }

  let replays = 0;
  const byRid = new Map(records.map((record) => [record.rid, record]));
  for await (const entry of kv.list<ReplayEntry>({ prefix: keys.replays(sessionId) })) {
    replays++;
    const key = parseKey(entry.key);
    const turn = byRid.get(entry.value.rid);
    if (
      !turn || recordChain.get(turn) !== entry.value.chainId || turn.index !== entry.value.index
    ) {
      fault(`${JSON.stringify(entry.key)}: names no turn`);
    } else if (key.kind !== "replay" || turn.bodyDigest !== key.bodyDigest) {
      fault(`${JSON.stringify(entry.key)}: names a turn of another request body`);
    }
  }
  for await (const entry of kv.list<string>({ prefix: keys.agents(sessionId) })) {
    if (!headers.has(entry.value)) fault(`${JSON.stringify(entry.key)}: names no chain`);
  }
  return { chains: headers.size, turns: records.length, chunks: chunkCount, replays };
}
