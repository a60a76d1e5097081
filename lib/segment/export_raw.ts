/**
 * The raw record of a session: every chain and every turn it ever recorded, discarded ones
 * included and marked, with each turn's own tokens. For audits and debugging, not training.
 *
 * @module
 */
import type { ChainHeader, TurnMessages, TurnRecord } from "../chain/mod.ts";
import {
  listChains,
  liveTurns,
  readAllTurns,
  readSessionSummary,
  readTurnMessages,
  readTurnTokens,
  type SessionSummary,
} from "../session/mod.ts";
import type { Store } from "../kv/mod.ts";

/** One turn as recorded, with its tokens. */
export interface RawTurn extends TurnRecord {
  /**
   * What its request added, as canonical messages (the tools too on a chain's first turn), when
   * the session records them (`record_messages`); else absent.
   */
  readonly request?: TurnMessages;
  /** True when a rewind took it off the chain: it never reaches a training sample. */
  readonly discarded: boolean;
  readonly tokens: {
    readonly delta: number[];
    readonly output: number[];
    readonly logprobs: number[];
    readonly closing: number[];
  };
}

/**
 * A session's raw record: its summary, and its chains' heads and turns as recorded. The `raw`
 * export shows the summary as the trainer API shows the session.
 */
export interface RawRecord {
  readonly session: SessionSummary;
  readonly chains: (ChainHeader & { readonly turns: RawTurn[] })[];
}

/**
 * Reads the raw record of a session.
 *
 * @throws {SessionNotFoundError}
 */
export async function rawRecord(kv: Store, sessionId: string): Promise<RawRecord> {
  const session = await readSessionSummary(kv, sessionId);
  const chains = [];
  for (const header of await listChains(kv, sessionId)) {
    const all = await readAllTurns(kv, sessionId, header.id);
    const live = new Set(liveTurns(all, header).map((turn) => turn.rid));
    const turns: RawTurn[] = [];
    for (const record of all) {
      const tokens = await readTurnTokens(kv, sessionId, header.id, record);
      const request = await readTurnMessages(kv, sessionId, header.id, record);
      turns.push({
        ...record,
        ...(request ? { request } : {}),
        discarded: !live.has(record.rid),
        tokens: {
          delta: [...tokens.delta],
          output: [...tokens.output],
          logprobs: [...tokens.logprobs],
          closing: [...tokens.closing],
        },
      });
    }
    chains.push({ ...header, turns });
  }
  return { session, chains };
}
