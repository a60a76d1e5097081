/**
 * The settle stage: what the engine sampled becomes what the turn records and the agent reads.
 * The output is parsed from the sampled tokens (T6), a live stream is finished with the rest of
 * the whole output's text, and the turn's flags are set: `roundtrip_mismatch` (and `masked` under
 * `ROUNDTRIP_POLICY=mask`, T5), `stream_diverged`, `ill_formed`, `engine_aborted`,
 * `engine_failover`, `session_resent`. An output without its end-of-turn token gets its closing
 * tokens (T5).
 *
 * @module
 */
import { closingTokens, survivesRoundTrip, type TurnEnd, turnEnd } from "../../chain/mod.ts";
import { jsonEqual } from "../../chat/mod.ts";
import type { RoundtripPolicy } from "../../config/mod.ts";
import type { Generation } from "../../engine/mod.ts";
import type { TurnFlag } from "../../metrics/mod.ts";
import { type OutputBlock, parseOutput, type ToolSchemas } from "../../output/mod.ts";
import type { ChatTokenizer } from "../../tokenizer/mod.ts";
import type { LiveOutput } from "../live_output.ts";
import type { OutputFeed } from "../output_feed.ts";
import { turnText } from "../output.ts";

/** A generated turn's output, settled. */
export interface SettledOutput {
  /** The sampled tokens, as the engine gave them. */
  readonly output: number[];
  readonly end: TurnEnd;
  /** Tokens appended after an output not ended by a stop token (mask 0). */
  readonly closing: number[];
  readonly flags: TurnFlag[];
  /** The policy masks the turn (trained on nothing). */
  readonly masked: boolean;
  /** What the agent receives: thinking, text and tool calls. */
  readonly blocks: readonly OutputBlock[];
  /** The output holds reasoning. */
  readonly reasoning: boolean;
}

/** What settling needs of the turn besides its generation. */
export interface SettleOptions {
  readonly roundtripPolicy: RoundtripPolicy;
  /** The prompt ended inside an open reasoning block. */
  readonly startsInReasoning: boolean;
  /** The tools the request offered. */
  readonly tools: ToolSchemas;
  /** The live parse and the feed it fed, when the turn streamed. */
  readonly live: { readonly parse: LiveOutput; readonly feed: OutputFeed } | null;
}

/** What settling reads of a generation: generations equal in these settle the same. */
export const SETTLE_READS = [
  "outputIds",
  "finish",
  "aborts",
  "failovers",
  "sessionResent",
] as const;

/** A generation as settling reads it. */
export type SettleReads = Pick<Generation, (typeof SETTLE_READS)[number]>;

/** Settles a generation's output; a live stream gets its last events. */
export function settleOutput(
  tokenizer: ChatTokenizer,
  generation: SettleReads,
  options: SettleOptions,
): SettledOutput {
  const output = generation.outputIds;
  const end = turnEnd(generation.finish);
  const flags: TurnFlag[] = [];
  let masked = false;
  if (!survivesRoundTrip(output, tokenizer)) {
    flags.push("roundtrip_mismatch");
    masked = options.roundtripPolicy === "mask";
  }
  const text = turnText(tokenizer, output, end);
  if (options.live) {
    const settled = options.live.parse.end(text);
    options.live.feed.push(settled.events);
    if (!settled.exact) flags.push("stream_diverged");
  }
  const parsed = parseOutput(text, {
    startsInReasoning: options.startsInReasoning,
    tools: options.tools,
    formats: tokenizer.formats,
  });
  if (parsed.illFormed.length > 0) flags.push("ill_formed");
  if (generation.aborts > 0) flags.push("engine_aborted");
  if ((generation.failovers ?? 0) > 0) flags.push("engine_failover");
  if (generation.sessionResent) flags.push("session_resent");
  if (masked) flags.push("masked");
  return {
    output,
    end,
    closing: closingTokens(output, tokenizer.ending),
    flags,
    masked,
    blocks: parsed.blocks,
    reasoning: parsed.blocks.some((block) => block.type === "thinking"),
  };
}

/**
 * A turn's output settled ahead, while the engine HTTP worker still decodes its routed experts
 * (told by `GenerateRequest.onAnswered`), and given back for the generation the engine returns
 * when that equals the one told in all settling reads ({@linkcode SETTLE_READS}, compared by
 * value); else (a failover after the telling, nothing told) it is settled then. Not for a live
 * stream: finishing one feeds its client.
 */
export class EarlySettle {
  readonly #tokenizer: ChatTokenizer;
  readonly #options: Omit<SettleOptions, "live">;
  #early: { readonly reads: SettleReads; readonly settled: SettledOutput } | null = null;

  constructor(tokenizer: ChatTokenizer, options: Omit<SettleOptions, "live">) {
    this.#tokenizer = tokenizer;
    this.#options = options;
  }

  /** Settles `generation` now (what it reads copied: the telling's state is what is kept). */
  tell(generation: SettleReads): void {
    const reads = settleReads(generation);
    try {
      this.#early = { reads, settled: this.#settle(reads) };
    } catch {
      this.#early = null; // settled again when it ends, and thrown there
    }
  }

  /** `generation` settled: the early settling when it read the same, once. */
  take(generation: SettleReads): SettledOutput {
    const early = this.#early;
    this.#early = null;
    if (early && jsonEqual(early.reads, settleReads(generation))) return early.settled;
    return this.#settle(generation);
  }

  #settle(generation: SettleReads): SettledOutput {
    return settleOutput(this.#tokenizer, generation, { ...this.#options, live: null });
  }
}

/** What settling reads of `generation`, copied, every key present. */
function settleReads(generation: SettleReads): SettleReads {
  return Object.fromEntries(
    SETTLE_READS.map((key) => [key, structuredClone(generation[key])]),
  ) as unknown as SettleReads;
}
