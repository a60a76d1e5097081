/**
 * Text from outside stays text. A tool result or a web page that contains `<|im_end|>` must not
 * become the end-of-turn token, or anything an agent reads could forge turn boundaries in what the
 * policy sees and is trained on. So before rendering, every added-token string (special or not:
 * `<|im_start|>`, `<think>`, `<tool_call>`…) in the prompt's strings is replaced by a sentinel —
 * a private-use character that occurs in none of them, around the token's index. The chat template
 * then places its own tokens literally; the rendered text is split at those, as the tokenizer
 * splits at added tokens, and each text section gets its sentinels back and is encoded as plain
 * text, with no added token recognized. Special tokens appear only where the template put them.
 *
 * @module
 */
import type { ChatPrompt } from "../chat/mod.ts";
import { LimitError } from "../limits/mod.ts";
import type { EncodeGuard } from "./encode_guard.ts";

/** How special-token strings in client text are tokenized. */
export type TextTokens = "plain" | "live";

/** An added token as the tokenizer defines it. */
export interface AddedToken {
  readonly content: string;
  readonly id: number;
  /** Whitespace before it is dropped when it is split out. */
  readonly lstrip: boolean;
  /** Whitespace after it is dropped when it is split out. */
  readonly rstrip: boolean;
}

/** The sentinels of one rendering, to put the escaped strings back. */
export interface Escapes {
  /** The private-use character around each sentinel; `null` when nothing was escaped. */
  readonly mark: string | null;
}

/** Sentinel bodies: the escaped token's index added to this (plane 15, private use). */
const INDEX_BASE = 0xf0000;
/** Private-use ranges a sentinel mark is chosen from; never plane 15, where bodies live. */
const MARK_RANGES: readonly (readonly [number, number])[] = [
  [0xe000, 0xf8ff],
  [0x100000, 0x10fffd],
];
/** A private-use character a mark could be, or a `\uXXXX` escape (of a surrogate pair too). */
const MARK_LIKE =
  /[\uE000-\uF8FF\u{100000}-\u{10FFFD}]|\\u([0-9a-fA-F]{4})(?:\\u([0-9a-fA-F]{4}))?/gu;

/** Escapes and encodes prompts for one tokenizer's added tokens. */
export class PlainText {
  /** Added tokens that client text may not produce: all but those of whitespace only. */
  readonly #escaped: readonly AddedToken[];
  readonly #escapeIndex: ReadonlyMap<string, number>;
  readonly #byContent: ReadonlyMap<string, AddedToken>;
  /** Finds every escaped token string (global: for `replace`). */
  readonly #find: RegExp | null;
  /** Tells whether a string holds one. */
  readonly #has: RegExp | null;
  /** Splits rendered text at every added token, keeping them. */
  readonly #split: RegExp | null;
  readonly #encodePlain: (
    text: string,
    section: number,
    guard?: EncodeGuard,
  ) => readonly number[];

  /**
   * @param tokens the tokenizer's added tokens. Rendered text is split at all of them; those
   *   made of whitespace only are not escaped, so text keeps the whitespace tokens the tokenizer
   *   gives it (they forge nothing, and templates trim whitespace).
   * @param encodePlain encodes a text section with no added token recognized; `section` is its
   *   index among the pieces the tokenizer's own splitter would give; `guard` watches it.
   */
  constructor(
    tokens: readonly AddedToken[],
    encodePlain: (text: string, section: number, guard?: EncodeGuard) => readonly number[],
  ) {
    this.#escaped = tokens.filter((token) => token.content.trim().length > 0);
    this.#escapeIndex = new Map(this.#escaped.map((token, i) => [token.content, i]));
    this.#byContent = new Map(tokens.map((token) => [token.content, token]));
    const escaped = alternation(this.#escaped);
    const all = alternation(tokens);
    this.#find = escaped ? new RegExp(escaped, "g") : null;
    this.#has = escaped ? new RegExp(escaped) : null;
    this.#split = all ? new RegExp(`(${all})`) : null;
    this.#encodePlain = encodePlain;
  }

  /**
   * `prompt` with every added-token string in its strings (object keys included) replaced by a
   * sentinel, and what puts them back.
   *
   * @throws {LimitError} when the prompt holds every private-use character a sentinel could use.
   */
  escape(prompt: ChatPrompt): { prompt: ChatPrompt; escapes: Escapes } {
    const find = this.#find;
    const has = this.#has;
    if (!find || !has || !someString(prompt, (text) => has.test(text))) {
      return { prompt, escapes: { mark: null } };
    }
    const mark = freeMark(prompt);
    const index = this.#escapeIndex;
    const replace = (text: string) =>
      text.replace(
        find,
        (token) => mark + String.fromCodePoint(INDEX_BASE + index.get(token)!) + mark,
      );
    return { prompt: mapStrings(prompt, replace) as ChatPrompt, escapes: { mark } };
  }

  /** The sentinels of `text` put back. */
  restore(text: string, escapes: Escapes): string {
    const { mark } = escapes;
    if (mark === null || !text.includes(mark)) return text;
    return text.replace(
      new RegExp(`${mark}(.)${mark}`, "gu"),
      (_, body: string) => this.#escaped[body.codePointAt(0)! - INDEX_BASE].content,
    );
  }

  /**
   * Token ids of rendered, escaped text: the template's added tokens as themselves, every text
   * section (its sentinels put back) as plain text; `guard` watches the encode as it goes.
   *
   * @throws {Error} when a sentinel did not come through the template intact; what `guard`
   * throws.
   */
  encode(text: string, escapes: Escapes, guard?: EncodeGuard): number[] {
    if (escapes.mark !== null) checkIntact(text, escapes.mark);
    // Even positions hold text, odd ones the added tokens the template placed, as split out by
    // the tokenizer's own splitter — which gives no empty pieces, so those do not count.
    const sections = this.#split ? text.split(this.#split) : [text];
    const pieceIndex: number[] = [];
    let pieces = 0;
    for (const section of sections) {
      pieceIndex.push(pieces);
      if (section.length > 0) pieces++;
    }
    for (let i = 1; i < sections.length; i += 2) {
      const token = this.#byContent.get(sections[i])!;
      if (token.lstrip) sections[i - 1] = sections[i - 1].trimEnd();
      if (token.rstrip && i + 1 < sections.length) sections[i + 1] = sections[i + 1].trimStart();
    }
    const ids: number[] = [];
    for (let i = 0; i < sections.length; i++) {
      if (i % 2 === 1) {
        ids.push(this.#byContent.get(sections[i])!.id);
        guard?.add(1);
      } else if (sections[i].length > 0) {
        const plain = this.#encodePlain(this.restore(sections[i], escapes), pieceIndex[i], guard);
        for (const id of plain) ids.push(id);
      }
    }
    return ids;
  }
}

/** A private-use character that occurs in none of `prompt`'s strings, nor as a `\u` escape. */
function freeMark(prompt: ChatPrompt): string {
  const taken = new Set<number>();
  someString(prompt, (text) => {
    for (const match of text.matchAll(MARK_LIKE)) {
      if (match[1] === undefined) {
        taken.add(match[0].codePointAt(0)!);
        continue;
      }
      const high = parseInt(match[1], 16);
      const low = match[2] === undefined ? null : parseInt(match[2], 16);
      if (low !== null && high >= 0xd800 && high < 0xdc00 && low >= 0xdc00 && low < 0xe000) {
        taken.add((high - 0xd800) * 0x400 + low - 0xdc00 + 0x10000);
      } else {
        taken.add(high);
        if (low !== null) taken.add(low);
      }
    }
    return false;
  });
  for (const [first, last] of MARK_RANGES) {
    for (let code = first; code <= last; code++) {
      if (!taken.has(code)) return String.fromCodePoint(code);
    }
  }
  throw new LimitError(
    "request",
    "holds every private-use character, so its special-token strings cannot be escaped",
  );
}

/** Throws unless every `mark` in `text` opens or closes a whole sentinel. */
function checkIntact(text: string, mark: string): void {
  const stray = text.replace(new RegExp(`${mark}.${mark}`, "gu"), "").includes(mark);
  if (stray || text.toLowerCase().includes(asciiEscape(mark))) {
    throw new Error(
      "The chat template changed the gateway's escape characters (does it escape non-ASCII, as tojson(ensure_ascii=True) does?)",
    );
  }
}

/** `text` as JSON writes it with non-ASCII escaped: `\uXXXX` per UTF-16 unit, lower case. */
function asciiEscape(text: string): string {
  let out = "";
  for (let i = 0; i < text.length; i++) {
    out += `\\u${text.charCodeAt(i).toString(16).padStart(4, "0")}`;
  }
  return out;
}

/** A regular expression matching any of `tokens`, the longest first (as the tokenizer's trie). */
function alternation(tokens: readonly AddedToken[]): string {
  return [...tokens].sort((a, b) => b.content.length - a.content.length)
    .map((token) => escapeRegExp(token.content)).join("|");
}

/** True when `test` holds for some string in `value` (object keys included). */
function someString(value: unknown, test: (text: string) => boolean): boolean {
  const stack = [value];
  while (stack.length > 0) {
    const item = stack.pop();
    if (typeof item === "string") {
      if (test(item)) return true;
    } else if (Array.isArray(item)) {
      for (const child of item) stack.push(child); // no spread: arrays may be long
    } else if (typeof item === "object" && item !== null) {
      for (const [key, child] of Object.entries(item)) {
        if (test(key)) return true;
        stack.push(child);
      }
    }
  }
  return false;
}

/** `value` with `map` applied to every string in it, object keys included. */
function mapStrings(value: unknown, map: (text: string) => string): unknown {
  if (typeof value === "string") return map(value);
  if (Array.isArray(value)) return value.map((item) => mapStrings(item, map));
  if (typeof value !== "object" || value === null) return value;
  const out: Record<string, unknown> = {};
  for (const [key, child] of Object.entries(value)) {
    Object.defineProperty(out, map(key), {
      value: mapStrings(child, map),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return out;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
