/**
 * A window of a chain's tokens as training sees them: each token's id, loss mask, logprob and
 * weight version, with where each live turn starts and what was flagged on it. Only the turns
 * that overlap the window have their tokens read, so a page of a 200k-token chain costs its
 * own tokens, not the chain's.
 *
 * @module
 */
import { type ChainHeader, outputMask, outputVersionSpans, type TurnRecord } from "../chain/mod.ts";
import { getChain, listChains, readReplayCounts } from "./session_store.ts";
import { liveTurns, readAllTurns, readLiveTurns, readTurnTokens } from "./turn_store.ts";
import { ChainNotFoundError } from "./errors.ts";
import { liveSession } from "./lifecycle.ts";
import type { Store } from "../kv/mod.ts";

/** What a token is in its turn: the prompt the turn added, the sampled output, its closing. */
export type TokenPart = "prompt" | "sampled" | "closing";

/** A live turn of the chain and where its tokens lie. */
export interface TurnSpan {
  readonly record: TurnRecord;
  /** Position of its first token (its delta's) in the chain. */
  readonly start: number;
  /** Position of its first sampled token. */
  readonly outputStart: number;
  /** Position after its last token. */
  readonly end: number;
  /** Times its reply answered a retry of its request. */
  readonly replays: number;
}

/** Tokens `from` up to `to` of a chain, one entry per token in every array. */
export interface ChainPage {
  readonly header: ChainHeader;
  /** Every live turn, in order, so a page can link to any of them. */
  readonly turns: readonly TurnSpan[];
  /** Tokens in the chain. */
  readonly total: number;
  readonly from: number;
  readonly to: number;
  readonly ids: number[];
  readonly parts: TokenPart[];
  /** The loss mask: 1 on sampled tokens of unmasked turns, 0 elsewhere. */
  readonly mask: number[];
  /** Logprob of a sampled token; `null` on prompt and closing tokens. */
  readonly logprobs: (number | null)[];
  /** The weight version that sampled a token; `null` on prompt and closing tokens. */
  readonly versions: (string | null)[];
  /** Index into `turns` of each token's turn. */
  readonly turnOf: number[];
}

/** Most tokens one page holds. */
export const MAX_PAGE_TOKENS = 8192;

/**
 * Reads the live chain `chainId` of session `sessionId`, tokens `from` (clamped to the chain)
 * up to `from + size`; given a `turn` index instead, the page of `size` (pages start at
 * multiples of it) that holds the turn's first token.
 *
 * @throws {SessionNotFoundError}
 * @throws {ChainNotFoundError}
 */
export async function readChainPage(
  kv: Store,
  sessionId: string,
  chainId: string,
  window: { readonly from?: number; readonly turn?: number; readonly size: number },
): Promise<ChainPage> {
  await liveSession(kv, sessionId);
  // Chain ids are the gateway's own; a longer one names no chain (and KV keys are bounded).
  const header = chainId.length <= 128 ? (await getChain(kv, sessionId, chainId)).value : null;
  if (!header) throw new ChainNotFoundError(sessionId, chainId);
  const replays = (await readReplayCounts(kv, sessionId, chainId)).get(chainId);
  const turns: TurnSpan[] = [];
  let at = 0;
  for (const record of await readLiveTurns(kv, header)) {
    const outputStart = at + record.deltaLen;
    const end = outputStart + record.outputLen + record.closingLen;
    turns.push({ record, start: at, outputStart, end, replays: replays?.get(record.rid) ?? 0 });
    at = end;
  }
  const total = at;
  const size = Math.max(1, Math.min(MAX_PAGE_TOKENS, Math.floor(window.size)));
  const asked = window.turn === undefined
    ? window.from ?? 0
    : Math.floor((turns.find((span) => span.record.index === window.turn)?.start ?? 0) / size) *
      size;
  const from = Math.max(0, Math.min(Math.floor(asked), Math.max(0, total - 1)));
  const to = Math.min(total, from + size);
  const page: ChainPage = {
    header,
    turns,
    total,
    from,
    to,
    ids: [],
    parts: [],
    mask: [],
    logprobs: [],
    versions: [],
    turnOf: [],
  };
  for (let t = 0; t < turns.length; t++) {
    const span = turns[t];
    if (span.end <= from || span.start >= to) continue;
    const tokens = await readTurnTokens(kv, sessionId, chainId, span.record);
    const versions = outputVersionSpans(span.record);
    const push = (
      position: number,
      id: number,
      part: TokenPart,
      logprob: number | null,
      version: string | null,
    ) => {
      if (position < from || position >= to) return;
      page.ids.push(id);
      page.parts.push(part);
      page.mask.push(part === "sampled" ? outputMask(span.record) : 0);
      page.logprobs.push(logprob);
      page.versions.push(version);
      page.turnOf.push(t);
    };
    for (let i = 0; i < tokens.delta.length; i++) {
      push(span.start + i, tokens.delta[i], "prompt", null, null);
    }
    for (let i = 0, v = 0; i < tokens.output.length; i++) {
      while (v < versions.length && versions[v].end <= i) v++;
      const version = versions[v]?.start <= i ? versions[v].version : null;
      push(span.outputStart + i, tokens.output[i], "sampled", tokens.logprobs[i], version);
    }
    const closingStart = span.outputStart + tokens.output.length;
    for (let i = 0; i < tokens.closing.length; i++) {
      push(closingStart + i, tokens.closing[i], "closing", null, null);
    }
  }
  return page;
}

/** A turn as the session's timeline shows it. */
export interface TimelineTurn {
  readonly record: TurnRecord;
  /** A rewind took it off its chain: it never reaches a training sample. */
  readonly discarded: boolean;
  /** Times its reply answered a retry of its request. */
  readonly replays: number;
}

/** Every chain of a session with every turn it recorded (discarded ones included), no tokens. */
export async function readTimeline(
  kv: Store,
  sessionId: string,
): Promise<{ header: ChainHeader; turns: TimelineTurn[] }[]> {
  await liveSession(kv, sessionId);
  const replays = await readReplayCounts(kv, sessionId);
  const chains = [];
  for (const header of await listChains(kv, sessionId)) {
    const all = await readAllTurns(kv, sessionId, header.id);
    const live = new Set(liveTurns(all, header).map((turn) => turn.rid));
    chains.push({
      header,
      // By index, and at one index in the order recorded: a rewound turn before its successor.
      turns: all.sort((a, b) => a.index - b.index || a.createdAt - b.createdAt).map((record) => ({
        record,
        discarded: !live.has(record.rid),
        replays: replays.get(header.id)?.get(record.rid) ?? 0,
      })),
    });
  }
  return chains;
}
