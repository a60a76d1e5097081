/**
 * What renders and encodes a turn's new text for the session: a chain's first prompt, or a
 * delta. The gateway's is a pool of tokenizer workers (`encoder_pool.ts`), so encoding one
 * agent's huge tool output never holds up the other sessions' turns on the request's event loop;
 * {@linkcode inProcessEncoder} does the same work on the caller's thread (`TOKENIZER_WORKERS=0`).
 * Either stops as soon as the tokens pass the budget the prompt can still take, and when the
 * caller gives up.
 *
 * @module
 */
import type { ChatMessage, ChatPrompt } from "../chat/mod.ts";
import { EncodeCancelledError, EncodeGuard } from "./encode_guard.ts";
import { renderDelta, type Rendered, renderPrompt } from "./render_delta.ts";
import type { ChatTokenizer } from "./tokenizer.ts";

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
 * import { inProcessEncoder, loadTokenizer, OverBudgetError } from "./mod.ts";
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
