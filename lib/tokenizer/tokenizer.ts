/**
 * The served model's tokenizer and chat template, loaded from a local Hugging Face folder by
 * `@huggingface/transformers` with remote loading switched off.
 *
 * @module
 */
import { AutoTokenizer, env, type PreTrainedTokenizer } from "@huggingface/transformers";
import type { ChatPrompt } from "../chat/mod.ts";
import { type CacheStats, DEFAULT_BUDGET_MB, memoryShares } from "../cache/mod.ts";
import { detectFormats, ModelFormatError, type ModelFormats, turnEndTexts } from "../output/mod.ts";
import { type AddedToken, type Escapes, PlainText, type TextTokens } from "./plain_text.ts";
import { type EncodeGuard, GUARD_BATCH_PIECES } from "./encode_guard.ts";
import { SectionCache } from "./section_cache.ts";
import { installFastByteLevel } from "./byte_level.ts";
import { installBpeCache } from "./bpe_cache.ts";
import { installFastSplit } from "./split_step.ts";

/**
 * Text sections of at least this many characters (a system prompt, a tool list) keep their
 * tokens across requests, up to `sectionCacheBytes` (by default {@linkcode SECTION_CACHE_BYTES})
 * of text and tokens in each isolate that loads the tokenizer.
 */
const SECTION_CACHE_MIN_CHARS = 2_048;
/** The section cache's bytes when the loader gives none: `MEMORY_BUDGET_MB`'s share at 1024. */
export const SECTION_CACHE_BYTES = memoryShares(DEFAULT_BUDGET_MB).caches.sections;

/** Encodes, decodes and renders chat prompts for one model. */
export interface ChatTokenizer {
  /** The folder the tokenizer was loaded from. */
  readonly path: string;
  /** The text of `eos_token` (`<|im_end|>` for Qwen3), which ends most families' turns. */
  readonly eosToken: string;
  /** The id of {@linkcode ChatTokenizer.eosToken}. */
  readonly eosId: number;
  /** How the model's turns end, in this tokenizer's tokens, for its formats. */
  readonly ending: TurnEnding;
  /** `model_max_length` from `tokenizer_config.json`, when it is a real limit. */
  readonly modelMaxLength: number | null;
  /** The chat template's text (every named template of the folder, joined), or the override. */
  readonly chatTemplate: string;
  /** The template given in place of the folder's (`CHAT_TEMPLATE`), if any. */
  readonly templateOverride: string | null;
  /**
   * The model's output formats: detected from the template when loaded, as configured once the
   * gateway resolves them (see `resolveFormats`).
   */
  readonly formats: ModelFormats;
  /**
   * How special-token strings in client text are tokenized: `plain` (as text; the template's
   * own tokens are the only special tokens) or `live` (as the tokens they name).
   */
  readonly textTokens: TextTokens;
  /** Token ids of `text`; special-token strings in it become their special tokens. */
  encode(text: string): number[];
  /** What its section cache holds in this isolate (absent: it has none). */
  sectionStats?(): CacheStats;
  /** Ids of the added tokens (the template's markers, `<think>`, `<tool_call>`…), sampled whole. */
  readonly addedIds: ReadonlySet<number>;
  /**
   * Each byte's own token, by byte value, in a byte-level vocabulary (GPT-2's byte alphabet, as
   * Qwen3, DeepSeek and gpt-oss use): what a model samples when it spells text byte by byte.
   * `null` when the vocabulary has no token for some byte.
   */
  readonly byteIds: readonly number[] | null;
  /**
   * `prompt` ready to render: with `plain` text tokens, every added-token string in its strings
   * replaced by a sentinel that {@linkcode ChatTokenizer.encodeRendered} and
   * {@linkcode ChatTokenizer.restore} put back.
   */
  escape(prompt: ChatPrompt): { prompt: ChatPrompt; escapes: Escapes };
  /**
   * Token ids of text rendered from an escaped prompt: the template's tokens, the rest as text.
   * `guard` watches the encode a batch of pieces at a time (with `live` text tokens, once at the
   * end).
   */
  encodeRendered(text: string, escapes: Escapes, guard?: EncodeGuard): number[];
  /** Rendered text with the escaped strings put back. */
  restore(text: string, escapes: Escapes): string;
  /** Text of `ids` with special tokens kept and no whitespace clean-up: exact where encode allows. */
  decode(ids: ArrayLike<number>): string;
  /** The chat template's text for `prompt`, ending with the assistant header when asked. */
  render(prompt: ChatPrompt, addGenerationPrompt: boolean): string;
}

/** How a model's turns end (see `TurnEndTexts`). */
export interface TurnEnding {
  /** The tokens the model samples to end its turn; the engine stops on each. */
  readonly stopIds: readonly number[];
  /**
   * The token that closes an output cut by `max_tokens` or a stop string, with mask 0 (T5);
   * `null` when the next message's role marker follows the output directly (GLM).
   */
  readonly closeId: number | null;
  /** Texts that end an assistant turn as the template renders it: a delta starts after one. */
  readonly closers: readonly string[];
  /** Role markers a delta starts at, in families whose turns have no closer (GLM). */
  readonly openers: readonly string[];
}

/** `model_max_length` values at or above this are tokenizer placeholders for "no limit". */
const NO_LIMIT = 1e12;

/**
 * Loads the tokenizer in `path` (a folder with `tokenizer.json` and `tokenizer_config.json`),
 * rendering with `chatTemplate` instead of the folder's when given.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { defaultTokenizerPath } from "../config/mod.ts";
 * import { loadTokenizer } from "./tokenizer.ts";
 * const tokenizer = await loadTokenizer(defaultTokenizerPath());
 * assert.equal(tokenizer.decode(tokenizer.encode("hi")), "hi");
 * ```
 */
export async function loadTokenizer(
  path: string,
  options: { textTokens?: TextTokens; chatTemplate?: string; sectionCacheBytes?: number } = {},
): Promise<ChatTokenizer> {
  for (const file of ["tokenizer.json", "tokenizer_config.json"]) {
    try {
      await Deno.stat(`${path}/${file}`);
    } catch {
      throw new Error(`Cannot load tokenizer: "${path}/${file}" is missing`);
    }
  }
  const inner = await libraryTokenizer(path);
  const eosToken: string | undefined = inner.eos_token;
  if (!eosToken) throw new Error(`Cannot load tokenizer: "${path}" defines no eos_token`);
  const eosId = inner.encode(eosToken, { add_special_tokens: false });
  if (eosId.length !== 1) {
    throw new Error(`Cannot load tokenizer: eos_token "${eosToken}" is not a single token`);
  }
  const config = inner._tokenizerConfig as Record<string, unknown>;
  const override = options.chatTemplate;
  if (
    override === undefined && typeof config.chat_template !== "string" &&
    !Array.isArray(config.chat_template)
  ) {
    throw new Error(
      `Cannot load tokenizer: "${path}/tokenizer_config.json" has no chat_template (give one with CHAT_TEMPLATE)`,
    );
  }
  const chatTemplate = override ??
    (typeof config.chat_template === "string"
      ? config.chat_template
      : (config.chat_template as { template?: unknown }[]).map((named) => String(named.template))
        .join("\n"));
  const maxLength = Number(config.model_max_length);
  const core = (inner as unknown as { _tokenizer: CoreTokenizer })._tokenizer;
  // The same tokens, several times faster on code and tool output (byte_level.ts,
  // bpe_cache.ts, split_step.ts).
  installFastSplit(core.pre_tokenizer as never);
  installFastByteLevel(core.pre_tokenizer as never);
  installBpeCache(core.model as never);
  releaseTokenizerJson(inner);
  const { plain, sections } = plainText(core, options.sectionCacheBytes ?? SECTION_CACHE_BYTES);
  const encode = (text: string) =>
    text.length === 0 ? [] : inner.encode(text, { add_special_tokens: false });
  const base: Omit<ChatTokenizer, "formats" | "ending"> = {
    path,
    addedIds: new Set(core.added_tokens.map((token) => token.id)),
    byteIds: byteTokenIds(core.model.tokens_to_ids),
    eosToken,
    eosId: eosId[0],
    textTokens: "plain",
    modelMaxLength: Number.isFinite(maxLength) && maxLength > 0 && maxLength < NO_LIMIT
      ? maxLength
      : null,
    chatTemplate,
    templateOverride: override ?? null,
    encode,
    escape: (prompt) => plain.escape(prompt),
    encodeRendered: (text, escapes, guard) => plain.encode(text, escapes, guard),
    sectionStats: () => sections.stats(),
    restore: (text, escapes) => plain.restore(text, escapes),
    decode: (ids) =>
      ids.length === 0 ? "" : inner.decode(Array.from(ids), {
        skip_special_tokens: false,
        clean_up_tokenization_spaces: false,
      }),
    render: (prompt, addGenerationPrompt) =>
      inner.apply_chat_template(prompt.messages as never, {
        tools: prompt.tools.length > 0 ? prompt.tools as never : null,
        add_generation_prompt: addGenerationPrompt,
        tokenize: false,
        ...(override === undefined ? {} : { chat_template: override }),
        // Families name the switch differently: Qwen3 and GLM `enable_thinking`, DeepSeek `thinking`.
        ...(prompt.enableThinking === undefined
          ? {}
          : { enable_thinking: prompt.enableThinking, thinking: prompt.enableThinking }),
      }) as string,
  };
  const formats = defaultFormats(chatTemplate);
  const eosEnding = {
    stopIds: [base.eosId],
    closeId: base.eosId,
    closers: [eosToken],
    openers: [],
  };
  let tokenizer: ChatTokenizer = { ...base, formats, ending: eosEnding };
  try {
    tokenizer = withFormats(tokenizer, formats);
  } catch (error) {
    // The detected family does not fit this vocabulary; the gateway's configuration decides.
    if (!(error instanceof ModelFormatError)) throw error;
  }
  return withTextTokens(tokenizer, options.textTokens ?? "plain");
}

/**
 * The tokenizer in folder `path` as `@huggingface/transformers` loads it, from local files only,
 * with nothing of the gateway's installed: {@linkcode loadTokenizer} builds on it, and tests and
 * the bench compare against it.
 */
export async function libraryTokenizer(path: string): Promise<PreTrainedTokenizer> {
  env.allowRemoteModels = false;
  env.allowLocalModels = true;
  const slash = path.replace(/\/+$/, "").lastIndexOf("/");
  env.localModelPath = slash >= 0 ? path.slice(0, slash + 1) : "./";
  return await AutoTokenizer.from_pretrained(path.slice(slash + 1), { local_files_only: true });
}

/**
 * Lets the collector take the library's copy of `tokenizer.json` once its maps are built: the
 * vocabulary and merges as parsed (the BPE model encodes with its rank map and token maps, and
 * reads neither list again). Some 21 of 49 MiB of each isolate that loads the tokenizer (the
 * main one and each tokenizer worker), measured on Qwen3's.
 */
function releaseTokenizerJson(inner: PreTrainedTokenizer): void {
  const library = inner as unknown as {
    _tokenizerJSON?: unknown;
    _tokenizer: {
      tokenizer?: unknown;
      model: { merges?: unknown; bpe_ranks?: unknown; config?: Record<string, unknown> };
    };
  };
  library._tokenizerJSON = undefined;
  library._tokenizer.tokenizer = undefined;
  const model = library._tokenizer.model;
  // Another kind of model (Unigram, WordPiece) may read its configuration as it encodes.
  if (!(model.bpe_ranks instanceof Map)) return;
  model.merges = undefined;
  if (model.config) {
    delete model.config.vocab;
    delete model.config.merges;
  }
}

/**
 * `tokenizer` serving `formats`: its {@linkcode ChatTokenizer.ending} is that family's.
 *
 * @throws {ModelFormatError} naming `TOOL_CALL_PARSER` when a token the family ends turns with is
 * not one token of this tokenizer (the format does not fit the model).
 */
export function withFormats(tokenizer: ChatTokenizer, formats: ModelFormats): ChatTokenizer {
  const texts = turnEndTexts(formats);
  const id = (text: string) => {
    const ids = tokenizer.encode(text);
    if (ids.length !== 1) {
      throw new ModelFormatError(
        "TOOL_CALL_PARSER",
        `${formats.toolCallParser} ends turns with "${text}", which is not a token of "${tokenizer.path}"`,
      );
    }
    return ids[0];
  };
  const stopIds = texts.stops === null ? [tokenizer.eosId] : texts.stops.map(id);
  const closeId = texts.close === false
    ? null
    : texts.close === null
    ? tokenizer.eosId
    : id(texts.close);
  texts.openers.forEach(id); // each role marker a delta starts at must be one token too
  return {
    ...tokenizer,
    formats,
    ending: {
      stopIds,
      closeId,
      closers: texts.closers ?? [tokenizer.eosToken],
      openers: texts.openers,
    },
  };
}

/**
 * The id of each byte's token under GPT-2's byte alphabet (`bytes_to_unicode`: printable Latin-1
 * bytes stand for themselves, the rest for code points from 256 up), or `null` when the
 * vocabulary lacks one.
 */
function byteTokenIds(vocab: ReadonlyMap<string, number>): number[] | null {
  const ids: number[] = [];
  let shifted = 0;
  for (let byte = 0; byte < 256; byte++) {
    const printable = (byte >= 0x21 && byte <= 0x7e) || (byte >= 0xa1 && byte <= 0xac) ||
      byte >= 0xae;
    const id = vocab.get(String.fromCharCode(printable ? byte : 256 + shifted++));
    if (id === undefined) return null;
    ids.push(id);
  }
  return ids;
}

/**
 * Pieces longer than this (one run of letters with no break, megabytes of it) are encoded whole,
 * as they must be for their tokens to be exact, and that costs time superlinear in their length
 * (4 MB: about a minute): a guarded encode first looks ahead at what such a piece will cost.
 */
const GIANT_PIECE_CHARS = 65_536;
/** Windows of a giant piece the look-ahead encodes, and their length. */
const GIANT_SAMPLES = 16;
const GIANT_SAMPLE_CHARS = 1_024;

/**
 * About half the tokens a giant piece will take, at least: its length times the token rate of
 * evenly spaced windows of it, halved so that no piece is refused on a rate its whole does not
 * have (byte-pair merges are local: a window takes the tokens its stretch of the piece takes,
 * but one or two at its edges).
 */
function giantPieceFloor(piece: string, model: (pieces: string[]) => number[]): number {
  const step = Math.floor((piece.length - GIANT_SAMPLE_CHARS) / (GIANT_SAMPLES - 1));
  let tokens = 0;
  for (let i = 0; i < GIANT_SAMPLES; i++) {
    tokens += model([piece.slice(i * step, i * step + GIANT_SAMPLE_CHARS)]).length;
  }
  return Math.floor(tokens / (GIANT_SAMPLES * GIANT_SAMPLE_CHARS) * piece.length / 2);
}

/** The formats a template's markers name, Qwen3's where they name none. */
function defaultFormats(template: string): ModelFormats {
  const detected = detectFormats(template);
  return {
    toolCallParser: detected.toolCallParser ?? "qwen25",
    reasoningParser: detected.reasoningParser,
  };
}

/**
 * `tokenizer` with special-token strings in client text tokenized as `mode` says; `live` makes
 * escaping a no-op and encodes rendered text with every added token recognized.
 */
export function withTextTokens(tokenizer: ChatTokenizer, mode: TextTokens): ChatTokenizer {
  if (tokenizer.textTokens === mode) return tokenizer;
  if (mode === "plain") {
    throw new RangeError("withTextTokens() cannot make a `live` tokenizer `plain` again");
  }
  return {
    ...tokenizer,
    textTokens: "live",
    escape: (prompt) => ({ prompt, escapes: { mark: null } }),
    encodeRendered: (text, _escapes, guard) => {
      const ids = tokenizer.encode(text);
      guard?.add(ids.length);
      return ids;
    },
    restore: (text) => text,
  };
}

/**
 * What it takes to load the same tokenizer elsewhere (a worker): its folder, the template given
 * in place of the folder's, its formats and how it treats special-token strings in text.
 */
export interface TokenizerSource {
  readonly path: string;
  readonly templateOverride: string | null;
  readonly formats: ModelFormats;
  readonly textTokens: TextTokens;
  /** Bytes of its section cache in the isolate that loads it (its share of the budget). */
  readonly sectionCacheBytes?: number;
}

/** How `tokenizer` was loaded, to load it again with {@linkcode loadTokenizerSource}. */
export function tokenizerSource(tokenizer: ChatTokenizer): TokenizerSource {
  return {
    path: tokenizer.path,
    templateOverride: tokenizer.templateOverride,
    formats: tokenizer.formats,
    textTokens: tokenizer.textTokens,
  };
}

/**
 * The tokenizer `source` describes, as {@linkcode loadTokenizer} and {@linkcode withFormats}
 * made it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { defaultTokenizerPath } from "../config/mod.ts";
 * import { loadTokenizer, loadTokenizerSource, tokenizerSource } from "./tokenizer.ts";
 * const tokenizer = await loadTokenizer(defaultTokenizerPath());
 * const again = await loadTokenizerSource(tokenizerSource(tokenizer));
 * assert.deepEqual(again.encode("<think>hi</think>"), tokenizer.encode("<think>hi</think>"));
 * assert.deepEqual(again.ending, tokenizer.ending);
 * ```
 */
export async function loadTokenizerSource(source: TokenizerSource): Promise<ChatTokenizer> {
  const loaded = await loadTokenizer(source.path, {
    textTokens: source.textTokens,
    chatTemplate: source.templateOverride ?? undefined,
    sectionCacheBytes: source.sectionCacheBytes,
  });
  return withFormats(loaded, source.formats);
}

/** The core tokenizer's parts that plain encoding uses (@huggingface/tokenizers' `Tokenizer`). */
interface CoreTokenizer {
  readonly added_tokens: readonly AddedToken[];
  readonly normalizer: ((text: string) => string) | null;
  readonly pre_tokenizer: ((text: string, options: { section_index: number }) => string[]) | null;
  readonly model: ((pieces: string[]) => string[]) & {
    readonly tokens_to_ids: ReadonlyMap<string, number>;
    readonly unk_token_id?: number;
  };
  readonly remove_space?: boolean;
  readonly do_lowercase_and_remove_accent?: boolean;
}

/**
 * Plain-text encoding over the core tokenizer: its normalizer, pre-tokenizer and model, as its
 * own `encode_text` runs them on a section between added tokens — but with no added token split
 * out. Never yields an added token's id.
 */
function plainText(
  core: CoreTokenizer,
  sectionCacheBytes: number,
): { plain: PlainText; sections: SectionCache } {
  if (core.remove_space || core.do_lowercase_and_remove_accent) {
    throw new Error("Cannot load tokenizer: remove_space and lowercasing are not supported");
  }
  const addedIds = new Set(core.added_tokens.map((token) => token.id));
  const model = (pieces: string[]) => {
    const ids = core.model(pieces).map((token) =>
      core.model.tokens_to_ids.get(token) ?? core.model.unk_token_id ?? -1
    );
    for (const id of ids) {
      if (id < 0 || addedIds.has(id)) {
        throw new Error(`Cannot encode text as plain text: the model produced token ${id}`);
      }
    }
    return ids;
  };
  const sections = new SectionCache((text, section, guard) => {
    const normalized = core.normalizer ? core.normalizer(text) : text;
    if (normalized.length === 0) return [];
    const pieces = core.pre_tokenizer
      ? core.pre_tokenizer(normalized, { section_index: section })
      : [normalized];
    if (!guard) return model(pieces);
    // A batch of pieces at a time, so a guard can stop a long section: the same tokens, since
    // the model encodes each piece on its own.
    const ids: number[] = [];
    for (let at = 0; at < pieces.length; at += GUARD_BATCH_PIECES) {
      const batch = pieces.slice(at, at + GUARD_BATCH_PIECES);
      for (const piece of batch) {
        if (piece.length > GIANT_PIECE_CHARS) guard.foresee(giantPieceFloor(piece, model));
      }
      const batchIds = model(batch);
      for (const id of batchIds) ids.push(id);
      guard.add(batchIds.length);
    }
    return ids;
  }, { minChars: SECTION_CACHE_MIN_CHARS, capacityBytes: sectionCacheBytes });
  return {
    plain: new PlainText(
      core.added_tokens,
      (text, section, guard) => sections.encode(text, section, guard),
    ),
    sections,
  };
}
