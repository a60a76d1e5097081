/**
 * Records, tokens and readers shared by the session store tests.
 *
 * @module
 */
import type { ChainHeader, TurnRecord } from "../../lib/chain/mod.ts";
import { encodeTurnTokens, type TurnTokens } from "../../lib/kv/chunked.ts";
import { readTurnTokens, type SessionRecord, type TurnCommit } from "../../lib/session/mod.ts";

export const SID = "s1";

export function session(overrides: Partial<SessionRecord> = {}): SessionRecord {
  return {
    id: SID,
    tokenDigest: "ab".repeat(32),
    status: "open",
    createdAt: 1,
    closedAt: null,
    expiresAt: null,
    metadata: {},
    allocation: null,
    chainCount: 1,
    mainChain: "c0",
    dev: false,
    ...overrides,
  };
}

export function header(
  chainId: string,
  turnCount: number,
  tokenCount: number,
  lastRid: string | null = null,
): ChainHeader {
  return {
    sessionId: SID,
    id: chainId,
    role: "main",
    wipedAt: null,
    parent: null,
    dispatch: null,
    agentId: null,
    model: "qwen3",
    tools: [],
    reasoning: false,
    startDigest: "d0",
    turnCount,
    tokenCount,
    messageCount: turnCount * 2,
    digest: `d${turnCount}`,
    lastRid,
    createdAt: 1,
    updatedAt: 1 + turnCount,
  };
}

export function turnRecord(
  index: number,
  tokens: TurnTokens,
  chunks: number,
  parent: string | null = null,
): TurnRecord {
  return {
    index,
    rid: crypto.randomUUID().replaceAll("-", ""), // each generation has its own
    parent,
    inputLen: 0,
    deltaLen: tokens.delta.length,
    outputLen: tokens.output.length,
    closingLen: tokens.closing.length,
    finishReason: "end_of_turn",
    stopSequence: null,
    toolCalls: 0,
    flags: [],
    masked: false,
    weightVersions: ["default"],
    aborts: 0,
    startsInReasoning: false,
    reasoning: false,
    toolNames: [],
    model: "qwen3",
    messageCount: (index + 1) * 2,
    digest: `d${index + 1}`,
    requestDigest: `r${index}`,
    bodyDigest: crypto.randomUUID(),
    chunks,
    createdAt: 1,
    timings: { renderMs: 0, engineMs: 0, engineReportedMs: 0, totalMs: 0 },
  };
}

export function tokensOf(deltaLen: number, outputLen: number, seed = 0): TurnTokens {
  return {
    delta: Array.from({ length: deltaLen }, (_, i) => (i * 31 + seed) % 151_000),
    output: Array.from({ length: outputLen }, (_, i) => (i * 17 + seed + 1) % 151_000),
    logprobs: Array.from({ length: outputLen }, (_, i) => -(i % 101) / 103 - 1e-9),
    closing: [151_645],
  };
}

/** Builds the commit of turn `index` of chain `chainId` on top of the entry `chain`. */
export function turnCommit(
  chain: Deno.KvEntryMaybe<ChainHeader>,
  chainId: string,
  index: number,
  tokens: TurnTokens,
): TurnCommit {
  const chunks = encodeTurnTokens(tokens);
  const before = chain.value?.tokenCount ?? 0;
  const added = tokens.delta.length + tokens.output.length + tokens.closing.length;
  const turn = turnRecord(index, tokens, chunks.length, chain.value?.lastRid ?? null);
  return {
    chain,
    header: header(chainId, index + 1, before + added, turn.rid),
    turn,
    chunks,
  };
}

export async function chunkStamps(kv: Deno.Kv, chainId: string, index: number): Promise<string[]> {
  const stamps: string[] = [];
  for await (const entry of kv.list({ prefix: ["turn_chunk", SID, chainId, index] })) {
    stamps.push(entry.versionstamp);
  }
  return stamps;
}

export async function readBack(kv: Deno.Kv, chainId: string, record: TurnRecord) {
  const decoded = await readTurnTokens(kv, SID, chainId, record);
  return {
    delta: [...decoded.delta],
    output: [...decoded.output],
    logprobs: [...decoded.logprobs],
    closing: [...decoded.closing],
  };
}
