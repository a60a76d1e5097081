/**
 * A session's recorded chains, read for export: each chain's live turns flattened to training
 * arrays. Discarded turns (rewound away) never reach a sample.
 *
 * @module
 */
import { type ChainArrays, flattenChain } from "../chain/mod.ts";
import {
  type ChainHeader,
  type ChainKind,
  listChains,
  readLiveTurns,
  readTurnTokens,
  type SessionRecord,
  type TurnRecord,
} from "../kv/mod.ts";
import { liveSession } from "../session/mod.ts";

/** One chain with its live turns and their tokens flattened. */
export interface ChainSample {
  readonly header: ChainHeader;
  readonly turns: readonly TurnRecord[];
  readonly arrays: ChainArrays;
}

/** A session and its chains, in the order they started; chains without turns are left out. */
export interface SessionSamples {
  readonly session: SessionRecord;
  readonly chains: readonly ChainSample[];
}

/**
 * Reads every chain of a session for export.
 *
 * @throws {SessionNotFoundError}
 */
export async function readSessionSamples(kv: Deno.Kv, sessionId: string): Promise<SessionSamples> {
  const session = (await liveSession(kv, sessionId)).value;
  const headers = new Map((await listChains(kv, sessionId)).map((header) => [header.id, header]));
  const chains: ChainSample[] = [];
  for (const chainId of session.chains) {
    const header = headers.get(chainId);
    if (!header || header.turnCount === 0) continue;
    const turns = await readLiveTurns(kv, header);
    const withTokens = [];
    for (const record of turns) {
      withTokens.push({ record, tokens: await readTurnTokens(kv, sessionId, chainId, record) });
    }
    chains.push({ header, turns, arrays: flattenChain(withTokens) });
  }
  return { session, chains };
}

/** What a sample says about each of its turns. */
export interface SampleTurn {
  /** Tokens of the prompt the engine read for this turn. */
  readonly input_len: number;
  /** Tokens the engine sampled. */
  readonly output_len: number;
  readonly finish_reason: string;
  readonly flags: readonly string[];
  readonly weight_versions: readonly string[];
}

/** One chain as a training sample: the default export format. */
export interface Sample extends ChainArrays {
  readonly kind: ChainKind;
  readonly chain_id: string;
  readonly turns: SampleTurn[];
}

/**
 * The default export of a chain.
 *
 * @example
 * ```ts
 * const { chains } = await readSessionSamples(kv, "sess_1");
 * const sample = toSample(chains[0]);
 * sample.loss_mask.length === sample.response_ids.length; // true
 * ```
 */
export function toSample(chain: ChainSample): Sample {
  return {
    kind: chain.header.kind,
    chain_id: chain.header.id,
    ...chain.arrays,
    turns: chain.turns.map((record) => ({
      input_len: record.inputLen,
      output_len: record.outputLen,
      finish_reason: record.finishReason,
      flags: record.flags,
      weight_versions: record.weightVersions,
    })),
  };
}
