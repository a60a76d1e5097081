/**
 * What renders and encodes a turn's new text for the session: a chain's first prompt, or a
 * delta. The gateway's is a pool of tokenizer workers (`encoder_pool.ts`), so encoding one
 * agent's huge tool output never holds up the other sessions' turns on the request's event loop;
 * {@linkcode inProcessEncoder} does the same work on the caller's thread (`TOKENIZER_WORKERS=0`),
 * and {@linkcode adaptiveEncoder} keeps a small text there while no other turn needs the event
 * loop, where the trip to a worker would cost more than the encode. Each stops as soon as the
 * tokens pass the budget the prompt can still take, and when the caller gives up.
 *
 * @module
 */
import { type ChatMessage, type ChatPrompt, contentText } from "../chat/mod.ts";
import { type ChatTokenizer, EncodeCancelledError, EncodeGuard } from "../tokenizer/mod.ts";
import { renderDelta, type Rendered, renderPrompt } from "./render_delta.ts";

/** How far an encode may go. */
export interface EncodeOptions {
  /** Most tokens the result may hold; past them an `OverBudgetError`, as soon as it is known. */
  readonly maxTokens?: number;
  /** The caller gives up: the encode stops with an `EncodeCancelledError`. */
  readonly signal?: AbortSignal;
}

/** Renders and encodes prompts and deltas with the served model's template and tokenizer. */
export interface PromptEncoder {
  /** A chain's first prompt (see `renderPrompt`). */
  renderPrompt(prompt: ChatPrompt, options?: EncodeOptions): Promise<Rendered>;
  /** The tokens that follow an assistant turn when `messages` come next (see `renderDelta`). */
  renderDelta(
    messages: readonly ChatMessage[],
    enableThinking: boolean | undefined,
    options?: EncodeOptions,
  ): Promise<Rendered>;
  /** Starts any workers now rather than on the first turn; resolves once they are ready. */
  warm(): Promise<void>;
  /** Stops any workers; later calls fail. */
  close(): Promise<void>;
}

/**
 * The encoder that works on the caller's thread: what the pool's workers run, without the
 * workers. An abort is seen between batches of pieces.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { defaultTokenizerPath } from "../config/mod.ts";
 * import { loadTokenizer, OverBudgetError } from "../tokenizer/mod.ts";
 * import { inProcessEncoder } from "./mod.ts";
 * const tokenizer = await loadTokenizer(defaultTokenizerPath());
 * const encoder = inProcessEncoder(tokenizer);
 * const delta = await encoder.renderDelta([{ role: "tool", content: "a.txt" }], undefined);
 * assert.ok(tokenizer.decode(delta.tokens).includes("<tool_response>\na.txt\n</tool_response>"));
 * await assert.rejects(
 *   encoder.renderDelta([{ role: "tool", content: "word ".repeat(100) }], undefined, {
 *     maxTokens: 50,
 *   }),
 *   OverBudgetError,
 * );
 * ```
 */
export function inProcessEncoder(tokenizer: ChatTokenizer): PromptEncoder {
  const guard = (options: EncodeOptions = {}) => {
    const { signal } = options;
    if (signal?.aborted) throw new EncodeCancelledError();
    return new EncodeGuard(options.maxTokens ?? Infinity, () => signal?.aborted === true);
  };
  return {
    renderPrompt: (prompt, options) => {
      try {
        return Promise.resolve(renderPrompt(tokenizer, prompt, guard(options)));
      } catch (error) {
        return Promise.reject(error);
      }
    },
    renderDelta: (messages, enableThinking, options) => {
      try {
        return Promise.resolve(renderDelta(tokenizer, messages, enableThinking, guard(options)));
      } catch (error) {
        return Promise.reject(error);
      }
    },
    warm: () => Promise.resolve(),
    close: () => Promise.resolve(),
  };
}

/** Options of {@linkcode adaptiveEncoder}. */
export interface AdaptiveOptions {
  /** Texts of at most this many characters may be encoded where the caller is. */
  readonly inlineChars: number;
  /** Other turns need the caller's event loop now: every text goes to the workers. */
  readonly contended: () => boolean;
}

/**
 * Encodes a small text (at most `inlineChars` characters of messages) with `inline` while the
 * caller's event loop is not `contended`, and everything else with `pool`. A lone turn's small
 * delta then costs its encode, not the trip to a worker and back (about 0.15 ms here, more than
 * the encode of a Claude Code tool result); under load, or for a text whose encode could hold the
 * event loop, the workers take it. Both give the same tokens.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { defaultTokenizerPath } from "../config/mod.ts";
 * import { loadTokenizer } from "../tokenizer/mod.ts";
 * import { adaptiveEncoder, inProcessEncoder, type PromptEncoder } from "./mod.ts";
 * const tokenizer = await loadTokenizer(defaultTokenizerPath());
 * const here = inProcessEncoder(tokenizer);
 * const pooled: string[] = [];
 * const pool: PromptEncoder = {
 *   ...here, // a stand-in for the workers, which notes what it is given
 *   renderDelta: (messages, enableThinking, options) => {
 *     pooled.push(messages[0].content as string);
 *     return here.renderDelta(messages, enableThinking, options);
 *   },
 * };
 * const encoder = adaptiveEncoder(here, pool, { inlineChars: 100, contended: () => false });
 * const small = [{ role: "tool" as const, content: "a.txt" }];
 * const big = [{ role: "tool" as const, content: "b.txt ".repeat(20) }];
 * assert.deepEqual(
 *   (await encoder.renderDelta(small, undefined)).tokens,
 *   (await pool.renderDelta(small, undefined)).tokens,
 * );
 * pooled.length = 0;
 * await encoder.renderDelta(small, undefined);
 * await encoder.renderDelta(big, undefined);
 * assert.deepEqual(pooled, [big[0].content]);
 * ```
 */
export function adaptiveEncoder(
  inline: PromptEncoder,
  pool: PromptEncoder,
  options: AdaptiveOptions,
): PromptEncoder {
  const here = (chars: number) => chars <= options.inlineChars && !options.contended();
  return {
    renderPrompt: (prompt, encode) =>
      (here(promptChars(prompt)) ? inline : pool).renderPrompt(prompt, encode),
    renderDelta: (messages, enableThinking, encode) =>
      (here(messagesChars(messages)) ? inline : pool).renderDelta(
        messages,
        enableThinking,
        encode,
      ),
    warm: () => pool.warm(),
    close: () => pool.close(),
  };
}

/** Characters of text in `messages`: how long their encode may take. */
export function messagesChars(messages: readonly ChatMessage[]): number {
  let chars = 0;
  for (const message of messages) {
    chars += typeof message.content === "string"
      ? message.content.length
      : contentText(message.content).length;
    if (message.role === "assistant") chars += message.reasoning_content?.length ?? 0;
  }
  return chars;
}

/**
 * Characters of text in a prompt's messages (its tools' text is encoded once and kept by the
 * section cache).
 */
export function promptChars(prompt: ChatPrompt): number {
  return messagesChars(prompt.messages);
}
