/**
 * Delta rendering (T3): the tokens between two assistant turns come from rendering only the new
 * messages with the chat template, against a tiny fixed anchor conversation, never the history.
 *
 * The anchor is `[user, assistant]`. Rendering `anchor ++ new` with the generation prompt and
 * cutting right after the anchor assistant's end-of-turn token leaves exactly what the template
 * puts after an assistant turn for these messages: the turn separator, the new messages and the
 * next assistant header. Its tokens are taken from the tokenization of the whole rendered text,
 * so they are the in-context tokens, and the cut is checked to fall on a token boundary.
 *
 * @module
 */
import type { ChatMessage, ChatPrompt } from "../chat/mod.ts";
import type { ChatTokenizer } from "./tokenizer.ts";

/** Text the anchor assistant says; chosen so no real message renders it. */
const ANCHOR_REPLY = "\u2063rollout-gateway-anchor\u2063";
const ANCHOR: readonly ChatMessage[] = [
  { role: "user", content: "\u2063" },
  { role: "assistant", content: ANCHOR_REPLY },
];

/** Thrown when the chat template cannot be rendered incrementally; a deployment problem. */
export class TemplateError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "TemplateError";
  }
}

/** Rendered tokens with the text they came from. */
export interface Rendered {
  readonly text: string;
  readonly tokens: number[];
}

/**
 * The full prompt of a chain's first turn: system, history and the assistant header.
 *
 * @example
 * ```ts
 * const { tokens } = renderPrompt(tokenizer, { messages: [{ role: "user", content: "hi" }], tools: [] });
 * ```
 */
export function renderPrompt(tokenizer: ChatTokenizer, prompt: ChatPrompt): Rendered {
  const text = tokenizer.render(prompt, true);
  return { text, tokens: tokenizer.encode(text) };
}

/**
 * The tokens that follow an assistant turn's end-of-turn token when `messages` come next,
 * ending with the next assistant header.
 *
 * @example
 * ```ts
 * const delta = renderDelta(tokenizer, [{ role: "tool", content: "file.txt" }]);
 * tokenizer.decode(delta.tokens);
 * // "\n<|im_start|>user\n<tool_response>\nfile.txt\n</tool_response><|im_end|>\n<|im_start|>assistant\n"
 * ```
 * @throws {TemplateError} when the template does not close the anchor turn with the
 * end-of-turn token, or when the cut does not fall on a token boundary.
 */
export function renderDelta(
  tokenizer: ChatTokenizer,
  messages: readonly ChatMessage[],
  enableThinking?: boolean,
): Rendered {
  const full = tokenizer.render(
    { messages: [...ANCHOR, ...messages], tools: [], enableThinking },
    true,
  );
  const reply = full.indexOf(ANCHOR_REPLY);
  const eos = reply < 0 ? -1 : full.indexOf(tokenizer.eosToken, reply + ANCHOR_REPLY.length);
  if (eos < 0) {
    throw new TemplateError(
      `Cannot render a delta: the chat template does not end an assistant turn with "${tokenizer.eosToken}"`,
    );
  }
  const cut = eos + tokenizer.eosToken.length;
  const fullTokens = tokenizer.encode(full);
  const anchorTokens = tokenizer.encode(full.slice(0, cut));
  const aligned = anchorTokens.length <= fullTokens.length &&
    anchorTokens.every((token, i) => fullTokens[i] === token);
  if (!aligned) {
    throw new TemplateError(
      "Cannot render a delta: the tokens after the end-of-turn token merge with it",
    );
  }
  return { text: full.slice(cut), tokens: fullTokens.slice(anchorTokens.length) };
}

/** True when a prompt ends inside an open reasoning block, so output starts as reasoning. */
export function opensReasoning(promptText: string): boolean {
  return /<think>\s*$/.test(promptText);
}
