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
 * Both render escaped prompts (see `PlainText`): special-token strings in the messages are
 * encoded as text unless the tokenizer is set to `live`.
 *
 * @module
 */
import type { CodedError } from "../errors/mod.ts";
import type { ChatMessage, ChatPrompt } from "../chat/mod.ts";
import type { Escapes } from "./plain_text.ts";
import type { ChatTokenizer } from "./tokenizer.ts";

/** Text the anchor assistant says; chosen so no real message renders it. */
const ANCHOR_REPLY = "\u2063rollout-gateway-anchor\u2063";
const ANCHOR: readonly ChatMessage[] = [
  { role: "user", content: "\u2063" },
  { role: "assistant", content: ANCHOR_REPLY },
];

/** Thrown when the chat template cannot be rendered incrementally; a deployment problem. */
export class TemplateError extends Error implements CodedError {
  readonly code = "template" as const;
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
  const { prompt: escaped, escapes } = tokenizer.escape(prompt);
  const text = tokenizer.render(escaped, true);
  return {
    text: tokenizer.restore(text, escapes),
    tokens: encodeRendered(tokenizer, text, escapes),
  };
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
  const { prompt, escapes } = tokenizer.escape({ messages, tools: [], enableThinking });
  const full = tokenizer.render({ ...prompt, messages: [...ANCHOR, ...prompt.messages] }, true);
  const reply = full.indexOf(ANCHOR_REPLY);
  const eos = reply < 0 ? -1 : full.indexOf(tokenizer.eosToken, reply + ANCHOR_REPLY.length);
  if (eos < 0) {
    throw new TemplateError(
      `Cannot render a delta: the chat template does not end an assistant turn with "${tokenizer.eosToken}"`,
    );
  }
  const cut = eos + tokenizer.eosToken.length;
  const fullTokens = encodeRendered(tokenizer, full, escapes);
  const anchorTokens = encodeRendered(tokenizer, full.slice(0, cut), escapes);
  const aligned = anchorTokens.length <= fullTokens.length &&
    anchorTokens.every((token, i) => fullTokens[i] === token);
  if (!aligned) {
    throw new TemplateError(
      "Cannot render a delta: the tokens after the end-of-turn token merge with it",
    );
  }
  return {
    text: tokenizer.restore(full.slice(cut), escapes),
    tokens: fullTokens.slice(anchorTokens.length),
  };
}

/** The tokens of escaped, rendered text; a template that mangles the escapes is a TemplateError. */
function encodeRendered(tokenizer: ChatTokenizer, text: string, escapes: Escapes): number[] {
  try {
    return tokenizer.encodeRendered(text, escapes);
  } catch (error) {
    throw new TemplateError(`Cannot encode the rendered prompt: ${(error as Error).message}`);
  }
}

/**
 * Renders what every request renders — a delta, and a whole prompt with a system prompt, tools,
 * a tool call and its result — with the end-of-turn token's text inside each client string, so
 * a template that cannot be rendered as a delta, or that mangles the escapes, fails at start-up
 * rather than on a request.
 *
 * @throws {TemplateError}
 */
export function checkTemplate(tokenizer: ChatTokenizer): void {
  const text = `start-up check ${tokenizer.eosToken}`;
  renderDelta(tokenizer, [{ role: "user", content: text }]);
  renderDelta(tokenizer, [{ role: "tool", content: text }, { role: "user", content: text }]);
  renderPrompt(tokenizer, {
    messages: [
      { role: "system", content: text },
      { role: "user", content: text },
      {
        role: "assistant",
        content: text,
        tool_calls: [{ type: "function", function: { name: "check", arguments: { text } } }],
      },
      { role: "tool", content: text },
      { role: "user", content: text },
    ],
    tools: [{
      type: "function",
      function: {
        name: "check",
        description: text,
        parameters: { type: "object", properties: { text: { type: "string", description: text } } },
      },
    }],
  });
}

/** True when a prompt ends inside an open reasoning block, so output starts as reasoning. */
export function opensReasoning(promptText: string): boolean {
  return /<think>\s*$/.test(promptText);
}
