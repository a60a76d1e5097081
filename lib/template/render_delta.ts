/**
 * Delta rendering (T3): the tokens between two assistant turns come from rendering only the new
 * messages with the chat template, against a tiny fixed anchor conversation, never the history.
 *
 * The anchor is `[user, assistant]`. Rendering `anchor ++ new` with the generation prompt and
 * cutting right after the anchor assistant's turn (after the first of the family's turn closers
 * after its text, or at the first role marker of the next message in a family without closers)
 * leaves exactly what the template puts after an assistant turn for these messages: the turn
 * separator, the new messages and the next assistant header. When the new
 * messages open with tool results, the anchor assistant calls those tools, as the real turn did:
 * some templates label a result with the call it answers (harmony's `functions.NAME`). Its tokens
 * are taken from the tokenization of the whole rendered text, so they are the in-context tokens,
 * and the cut is checked to fall on a token boundary.
 *
 * Both render escaped prompts (see `PlainText`): special-token strings in the messages are
 * encoded as text unless the tokenizer is set to `live`.
 *
 * @module
 */
import type { CodedError } from "../errors/mod.ts";
import { type ChatImage, type ChatMessage, type ChatPrompt, messageImages } from "../chat/mod.ts";
import { modelFamily } from "../output/mod.ts";
import {
  type ChatTokenizer,
  EncodeCancelledError,
  type EncodeGuard,
  type Escapes,
  OverBudgetError,
} from "../tokenizer/mod.ts";

/** Text the anchor assistant says; chosen so no real message renders it. */
const ANCHOR_REPLY = "\u2063rollout-gateway-anchor\u2063";
const ANCHOR_USER: ChatMessage = { role: "user", content: "\u2063" };

/** The text of the anchor assistant's call `index`, inside its arguments. */
const anchorCallText = (index: number) => `\u2063rollout-gateway-anchor-call-${index}\u2063`;

/**
 * The anchor before `messages`, and the texts of its assistant turn, in the order rendered: the
 * turn ends at the first closer after the last of them the template renders.
 */
function anchorFor(messages: readonly ChatMessage[]): { anchor: ChatMessage[]; texts: string[] } {
  const results: string[] = [];
  for (const message of messages) {
    if (message.role !== "tool") break;
    results.push(message.name ?? "tool");
  }
  const calls = results.map((name, index) => ({
    type: "function" as const,
    function: { name, arguments: { anchor: anchorCallText(index) } },
  }));
  return {
    anchor: [
      ANCHOR_USER,
      {
        role: "assistant",
        content: ANCHOR_REPLY,
        ...(calls.length > 0 ? { tool_calls: calls } : {}),
      },
    ],
    texts: [ANCHOR_REPLY, ...calls.map((_, index) => anchorCallText(index))],
  };
}

/** Thrown when the chat template cannot be rendered incrementally; a deployment problem. */
export class TemplateError extends Error implements CodedError {
  readonly code = "template" as const;
  constructor(message: string) {
    super(message);
    this.name = "TemplateError";
  }
}

/** Where an image stands in rendered tokens: its pads, from `offset` for `length` tokens. */
export interface ImageSpan {
  readonly offset: number;
  readonly length: number;
}

/** Rendered tokens with the text they came from. */
export interface Rendered {
  readonly text: string;
  readonly tokens: number[];
  /** Each image's pads in `tokens`, in order; absent when the messages hold no image. */
  readonly images?: readonly ImageSpan[];
  /**
   * `tokens` as the engine's body writes them (`PromptIds`: comma-separated ASCII digits), when
   * a tokenizer worker wrote them off the event loop.
   */
  readonly ascii?: Uint8Array;
}

/**
 * The full prompt of a chain's first turn: system, history and the assistant header.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { defaultTokenizerPath } from "../config/mod.ts";
 * import { renderPrompt } from "./render_delta.ts";
 * import { loadTokenizer } from "../tokenizer/mod.ts";
 * const tokenizer = await loadTokenizer(defaultTokenizerPath());
 * const { text, tokens } = renderPrompt(tokenizer, {
 *   messages: [{ role: "user", content: "hi" }],
 *   tools: [],
 * });
 * assert.equal(tokenizer.decode(tokens), text);
 * ```
 * @throws what `guard`, which watches the encode, throws.
 */
export function renderPrompt(
  tokenizer: ChatTokenizer,
  prompt: ChatPrompt,
  guard?: EncodeGuard,
): Rendered {
  const { prompt: escaped, escapes } = tokenizer.escape(prompt);
  const text = tokenizer.render(escaped, true);
  return withImages(
    tokenizer,
    {
      text: tokenizer.restore(text, escapes),
      tokens: encodeRendered(tokenizer, text, escapes, guard),
    },
    messageImages(prompt.messages),
    guard,
  );
}

/**
 * The tokens that follow an assistant turn's end-of-turn token when `messages` come next,
 * ending with the next assistant header.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { defaultTokenizerPath } from "../config/mod.ts";
 * import { renderDelta } from "./render_delta.ts";
 * import { loadTokenizer } from "../tokenizer/mod.ts";
 * const tokenizer = await loadTokenizer(defaultTokenizerPath());
 * const delta = renderDelta(tokenizer, [{ role: "tool", content: "file.txt" }]);
 * assert.equal(
 *   tokenizer.decode(delta.tokens),
 *   "\n<|im_start|>user\n<tool_response>\nfile.txt\n</tool_response><|im_end|>\n" +
 *     "<|im_start|>assistant\n",
 * );
 * ```
 * @throws {TemplateError} when the template does not close the anchor turn with the
 * end-of-turn token, or when the cut does not fall on a token boundary; what `guard`, which
 * watches the encode (the anchor's few tokens count toward its budget), throws.
 */
export function renderDelta(
  tokenizer: ChatTokenizer,
  messages: readonly ChatMessage[],
  enableThinking?: boolean,
  guard?: EncodeGuard,
): Rendered {
  const { prompt, escapes } = tokenizer.escape({ messages, tools: [], enableThinking });
  const { anchor, texts } = anchorFor(prompt.messages);
  const full = tokenizer.render({ ...prompt, messages: [...anchor, ...prompt.messages] }, true);
  const { closers, openers } = tokenizer.ending;
  const cut = anchorEnd(full, texts, closers, openers);
  if (cut < 0) {
    throw new TemplateError(
      `Cannot render a delta: the chat template does not ${
        closers.length > 0 ? `end an assistant turn with ${quoted(closers)}` : ""
      }${closers.length > 0 && openers.length > 0 ? " or " : ""}${
        openers.length > 0 ? `follow an assistant turn with ${quoted(openers)}` : ""
      }`,
    );
  }
  const anchorTokens = encodeRendered(tokenizer, full.slice(0, cut), escapes);
  // The anchor's tokens are counted in the whole text's, and cut off after.
  guard?.allow(anchorTokens.length);
  const fullTokens = encodeRendered(tokenizer, full, escapes, guard);
  const aligned = anchorTokens.length <= fullTokens.length &&
    anchorTokens.every((token, i) => fullTokens[i] === token);
  if (!aligned) {
    throw new TemplateError(
      "Cannot render a delta: the tokens after the end-of-turn token merge with it",
    );
  }
  return withImages(
    tokenizer,
    {
      text: tokenizer.restore(full.slice(cut), escapes),
      tokens: fullTokens.slice(anchorTokens.length),
    },
    messageImages(messages),
    guard,
  );
}

/**
 * `rendered` with the one pad the template put where each of `images` stands expanded to the
 * image's tokens, as the model's processor does, and where each now is. Client text never holds
 * the pad token (escaped as text), so every pad is the template's; a count that differs from the
 * images is a template that does not render them.
 *
 * @throws {TemplateError} when the family has no image pad or the pads do not match the images;
 * what `guard` throws once the expanded tokens pass its budget.
 */
function withImages(
  tokenizer: ChatTokenizer,
  rendered: Rendered,
  images: readonly ChatImage[],
  guard?: EncodeGuard,
): Rendered {
  if (images.length === 0) return rendered;
  const pad = imagePadId(tokenizer);
  const tokens: number[] = [];
  const spans: ImageSpan[] = [];
  for (const id of rendered.tokens) {
    if (id !== pad) {
      tokens.push(id);
      continue;
    }
    const image = images[spans.length];
    if (image === undefined) break;
    guard?.add(image.tokens - 1);
    spans.push({ offset: tokens.length, length: image.tokens });
    for (let i = 0; i < image.tokens; i++) tokens.push(pad);
  }
  const pads = rendered.tokens.reduce((count, id) => count + (id === pad ? 1 : 0), 0);
  if (pads !== images.length) {
    throw new TemplateError(
      `The chat template rendered ${pads} image placeholders for ${images.length} images: it does not render image parts`,
    );
  }
  return { ...rendered, tokens, images: spans };
}

/** The id of the family's image pad token. @throws {TemplateError} when it has none. */
function imagePadId(tokenizer: ChatTokenizer): number {
  const pad = modelFamily(tokenizer.formats).imagePad;
  const ids = pad === undefined ? [] : tokenizer.encode(pad);
  if (ids.length !== 1 || !tokenizer.addedIds.has(ids[0])) {
    throw new TemplateError(
      `Cannot serve images: the ${
        modelFamily(tokenizer.formats).name
      } family's tokenizer has no image pad token`,
    );
  }
  return ids[0];
}

const quoted = (texts: readonly string[]) => texts.map((text) => `"${text}"`).join(" or ");

/**
 * Where the anchor assistant's turn ends in `full`, looking from the last of its texts the
 * template rendered (templates may leave calls out): after the first closer, or at the first
 * opener (the next message's role marker), whichever comes first; -1 when there is neither.
 */
function anchorEnd(
  full: string,
  texts: readonly string[],
  closers: readonly string[],
  openers: readonly string[],
): number {
  let from = -1;
  for (const text of texts) {
    const at = full.indexOf(text);
    if (at >= 0) from = Math.max(from, at + text.length);
  }
  if (from < 0) return -1;
  let first = -1;
  let cut = -1;
  const consider = (marker: string, after: boolean) => {
    const at = full.indexOf(marker, from);
    if (at >= 0 && (first < 0 || at < first)) [first, cut] = [at, after ? at + marker.length : at];
  };
  for (const closer of closers) consider(closer, true);
  for (const opener of openers) consider(opener, false);
  return cut;
}

/**
 * The tokens of escaped, rendered text, watched by `guard`; a template that mangles the escapes
 * is a TemplateError.
 */
function encodeRendered(
  tokenizer: ChatTokenizer,
  text: string,
  escapes: Escapes,
  guard?: EncodeGuard,
): number[] {
  try {
    return tokenizer.encodeRendered(text, escapes, guard);
  } catch (error) {
    if (error instanceof OverBudgetError || error instanceof EncodeCancelledError) throw error;
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
  const text = `start-up check ${
    [
      ...new Set([tokenizer.eosToken, ...tokenizer.ending.closers, ...tokenizer.ending.openers]),
    ].join(" ")
  }`;
  renderDelta(tokenizer, [{ role: "user", content: text }]);
  renderDelta(tokenizer, [
    { role: "tool", name: "check", content: text },
    { role: "user", content: text },
  ]);
  renderPrompt(tokenizer, {
    messages: [
      { role: "system", content: text },
      { role: "user", content: text },
      {
        role: "assistant",
        content: text,
        tool_calls: [{ type: "function", function: { name: "check", arguments: { text } } }],
      },
      { role: "tool", name: "check", content: text },
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

/**
 * Renders a user message holding one image, as a vision model's requests do, and returns the
 * image pad's id: a template that does not render image parts as one pad, or a family without
 * one, fails at start-up rather than on a request.
 *
 * @throws {TemplateError}
 */
export function checkImageTemplate(tokenizer: ChatTokenizer): number {
  const pad = imagePadId(tokenizer);
  const image: ChatImage = {
    type: "image",
    digest: "0".repeat(64),
    media_type: "image/png",
    width: 64,
    height: 64,
    bytes: 0,
    tokens: 3,
  };
  const content = [{ type: "text" as const, text: "start-up check" }, image];
  let rendered: Rendered;
  try {
    rendered = renderPrompt(tokenizer, { messages: [{ role: "user", content }], tools: [] });
    renderDelta(tokenizer, [{ role: "tool", name: "check", content }]);
  } catch (error) {
    if (error instanceof TemplateError) throw error;
    // A text template that reads content as a string fails inside Jinja.
    throw new TemplateError(
      `The chat template cannot render image parts: ${(error as Error).message}`,
    );
  }
  if (rendered.images?.length !== 1) {
    throw new TemplateError("The chat template does not render image parts");
  }
  return pad;
}
