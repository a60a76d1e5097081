/**
 * From a scripted reply to the tokens a call answers with and why it finished, under the call's
 * sampling parameters, as SGLang would end the same output.
 *
 * @module
 */
import type { ChatTokenizer } from "../template/mod.ts";
import type { EngineCall, Reply } from "./script.ts";

/** The reply of a call that never generated. */
export const NOTHING: Reply = { tokens: [], eos: false };

/** The tokens and finish reason of a reply under the call's sampling parameters. */
export function plan(
  tokenizer: ChatTokenizer,
  call: EngineCall,
  reply: Reply,
): { tokens: number[]; finish: Record<string, unknown> } {
  const spec = typeof reply === "string" ? { text: reply } : reply;
  const base = spec.tokens ? [...spec.tokens] : tokenizer.encode(spec.text ?? "");
  const full = spec.eos === false ? base : [...base, tokenizer.ending.stopIds[0]];
  const stopIds = new Set((call.sampling.stop_token_ids as number[] | undefined) ?? []);
  for (const id of tokenizer.ending.stopIds) stopIds.add(id);
  const stops = (call.sampling.stop as string[] | undefined) ?? [];
  const maxNew = Number(call.sampling.max_new_tokens ?? 128);
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
