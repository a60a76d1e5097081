/**
 * From a scripted reply to the tokens a call answers with and why it finished, under the call's
 * sampling parameters, as SGLang would end the same output.
 *
 * @module
 */
import type { ChatTokenizer } from "../tokenizer/mod.ts";
import type { EngineCall, Reply, Spelling } from "./script.ts";

/** The reply of a call that never generated. */
export const NOTHING: Reply = { tokens: [], eos: false };

/** What ends an output: its length limit, stop token ids (besides the family's), stop strings. */
export interface OutputLimits {
  readonly maxNew: number;
  readonly stopIds: readonly number[];
  readonly stops: readonly string[];
}

/** The limits of an SGLang call's `sampling_params`. */
export function sglangLimits(sampling: Record<string, unknown>): OutputLimits {
  return {
    maxNew: Number(sampling.max_new_tokens ?? 128),
    stopIds: (sampling.stop_token_ids as number[] | undefined) ?? [],
    stops: (sampling.stop as string[] | undefined) ?? [],
  };
}

/** The tokens and finish reason of a reply under the call's limits. */
export function plan(
  tokenizer: ChatTokenizer,
  call: EngineCall,
  reply: Reply,
  spelling: Spelling = "tokenizer",
  limits: OutputLimits = sglangLimits(call.sampling),
): { tokens: number[]; finish: Record<string, unknown> } {
  const spec = typeof reply === "string" ? { text: reply } : reply;
  const base = spec.tokens
    ? [...spec.tokens]
    : (spec.spelling ?? spelling) === "characters"
    ? spelledOut(tokenizer, spec.text ?? "")
    : tokenizer.encode(spec.text ?? "");
  const full = spec.eos === false ? base : [...base, tokenizer.ending.stopIds[0]];
  const stopIds = new Set(limits.stopIds);
  for (const id of tokenizer.ending.stopIds) stopIds.add(id);
  const { stops, maxNew } = limits;
  const tokens: number[] = [];
  // As SGLang's Req.check_finished: the length limit first, then stop tokens, then stop strings.
  for (const token of full) {
    if (maxNew <= 0) break;
    tokens.push(token);
    if (tokens.length >= maxNew) return { tokens, finish: { type: "length", length: maxNew } };
    if (stopIds.has(token)) return { tokens, finish: { type: "stop", matched: token } };
    if (stops.length > 0) {
      const text = tokenizer.decode(tokens);
      const matched = stops.find((stop) => text.includes(stop));
      if (matched) return { tokens, finish: { type: "stop", matched } };
    }
  }
  return { tokens, finish: { type: "length", length: tokens.length } };
}

/**
 * `text` sampled character by character: each run of ordinary tokens as one token per UTF-8
 * byte (a printable ASCII character is its own byte), added tokens whole.
 *
 * @throws {RangeError} when the vocabulary is not byte-level.
 */
export function spelledOut(tokenizer: ChatTokenizer, text: string): number[] {
  const bytes = tokenizer.byteIds;
  if (bytes === null) {
    throw new RangeError(`Cannot spell text out: "${tokenizer.path}" has no token for every byte`);
  }
  const utf8 = new TextEncoder();
  const out: number[] = [];
  let run: number[] = [];
  const flush = () => {
    for (const byte of utf8.encode(tokenizer.decode(run))) out.push(bytes[byte]);
    run = [];
  };
  for (const id of tokenizer.encode(text)) {
    if (!tokenizer.addedIds.has(id)) {
      run.push(id);
      continue;
    }
    flush();
    out.push(id);
  }
  flush();
  return out;
}
