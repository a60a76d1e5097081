/**
 * A session's training samples: one per chain, flattened to token arrays with per-turn facts.
 *
 * @module
 */
import { type ChainArrays, flattenChain } from "../chain/mod.ts";
import {
  type ChainKind,
  getSession,
  listChains,
  readLiveTurns,
  readTurnTokens,
} from "../kv/mod.ts";
import { SessionNotFoundError } from "../session/mod.ts";

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

/** One chain as a training sample. */
export interface Sample extends ChainArrays {
  readonly kind: ChainKind;
  readonly chain_id: string;
  readonly turns: SampleTurn[];
}

/**
 * Every chain of a session as a sample, in the order the chains started.
 *
 * @example
 * ```ts
 * const samples = await sessionSamples(kv, "sess_1");
 * samples[0].loss_mask.length === samples[0].response_ids.length; // true
 * ```
 * @throws {SessionNotFoundError}
 */
export async function sessionSamples(kv: Deno.Kv, sessionId: string): Promise<Sample[]> {
  const session = await getSession(kv, sessionId);
  if (!session.value) throw new SessionNotFoundError(sessionId);
  const headers = new Map((await listChains(kv, sessionId)).map((header) => [header.id, header]));
  const samples: Sample[] = [];
  for (const chainId of session.value.chains) {
    const header = headers.get(chainId);
    if (!header || header.turnCount === 0) continue;
    const records = await readLiveTurns(kv, header);
    const turns = [];
    for (const record of records) {
      turns.push({ record, tokens: await readTurnTokens(kv, sessionId, chainId, record) });
    }
    samples.push({
      kind: header.kind,
      chain_id: chainId,
      ...flattenChain(turns),
      turns: records.map((record) => ({
        input_len: record.inputLen,
        output_len: record.outputLen,
        finish_reason: record.finishReason,
        flags: record.flags,
        weight_versions: record.weightVersions,
      })),
    });
  }
  return samples;
}
