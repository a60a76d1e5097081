/**
 * Answering a retry (docs/DESIGN.md §4.1, `replay`): the recorded turn's reply rebuilt from its
 * sampled tokens — same ids, same content — and nothing recorded but a count for the viewer.
 *
 * @module
 */
import type { TurnEnd, TurnRecord } from "../chain/mod.ts";
import type { Store } from "../kv/mod.ts";
import type { GatewayMetrics } from "../metrics/mod.ts";
import type { ChatTokenizer } from "../tokenizer/mod.ts";
import { parseTurnOutput } from "./output.ts";
import type { ReplayRoute } from "./routed_turn.ts";
import { countReplay } from "./session_store.ts";
import { readAllTurns, readChainTokens, readTurnTokens } from "./turn_store.ts";
import type { TurnInput } from "./turn_input.ts";

/** What a replay reads. */
export interface ReplayDeps {
  readonly kv: Store;
  readonly tokenizer: ChatTokenizer;
  readonly metrics?: GatewayMetrics;
}

/** The reply a recorded turn gave, rebuilt from its sampled tokens. */
export async function recordedReply<Reply>(
  deps: ReplayDeps,
  input: TurnInput<Reply>,
  replay: ReplayRoute,
): Promise<Reply> {
  const { record, sessionId, chainId } = replay;
  // Bookkeeping for the viewer: a count that cannot be written never fails the retry it counts.
  await countReplay(deps.kv, sessionId, chainId, record.rid).catch((error) =>
    console.warn(`Cannot count a replay of turn ${record.rid}:`, error)
  );
  const tokens = await readTurnTokens(deps.kv, sessionId, chainId, record);
  const end: TurnEnd = { reason: record.finishReason, stopSequence: record.stopSequence };
  const output = Array.from(tokens.output);
  // The same request as the recorded one: its tools, schemas included, are the recorded ones.
  const parsed = parseTurnOutput(
    deps.tokenizer,
    output,
    end,
    record.startsInReasoning,
    input.toolSchemas,
  );
  const { reply } = input.reply({
    rid: record.rid,
    blocks: parsed.blocks,
    end,
    inputTokens: record.inputLen,
    outputTokens: record.outputLen,
    outputIds: tokens.output,
    logprobs: tokens.logprobs,
    ...(input.tokenData?.promptIds
      ? { promptIds: await readTurnPrompt(deps.kv, sessionId, chainId, record) }
      : {}),
  });
  deps.metrics?.turns.inc("replay");
  return reply;
}

/**
 * The prompt a recorded turn read: the tokens of its ancestors (through the parent links) and
 * its own delta. Reads the whole history: only a replay that asks for prompt ids needs it.
 *
 * @throws {Error} when a linked turn is missing or the tokens do not add up to the recorded
 * prompt length (a broken chain).
 */
async function readTurnPrompt(
  kv: Store,
  sessionId: string,
  chainId: string,
  record: TurnRecord,
): Promise<number[]> {
  const byRid = new Map(
    (await readAllTurns(kv, sessionId, chainId)).map((turn) => [turn.rid, turn]),
  );
  const lineage: TurnRecord[] = [];
  for (let turn: TurnRecord | undefined = record; turn; turn = byRid.get(turn.parent ?? "")) {
    lineage.unshift(turn);
    if (turn.parent === null) break;
  }
  let prompt: number[] = [];
  const tokens = await readChainTokens(kv, sessionId, chainId, lineage);
  lineage.forEach((turn, i) => {
    const { delta, output, closing } = tokens[i];
    const parts = turn === record ? [delta] : [delta, output, closing];
    prompt = prompt.concat(...parts.map((part) => Array.from(part)));
  });
  if (prompt.length !== record.inputLen) {
    throw new Error(
      `Cannot rebuild the prompt of turn ${record.index} of chain "${chainId}": ${prompt.length} tokens, recorded ${record.inputLen}`,
    );
  }
  return prompt;
}
