/**
 * Routed experts read where the answer is read (R3; docs/DESIGN.md §7): a later turn's answer
 * carries ~2 KiB of base64 a new token (SGLang's int32 rows), which the engine HTTP worker decodes,
 * narrows and hashes on its own thread, so the request's event loop never holds the string.
 *
 * The worker parses an answer (or a stream's event) that names `routed_experts`, takes each
 * routes string the dialect's reader finds, and puts in its place, in the answer's own text, a
 * marker `{"$routes": k, "nonce": …}` naming the k-th decoded rows, sent after it (the text goes
 * first, so the turn is settled while the rows are decoded); the nonce is the worker's, made for
 * that text, so no engine can forge one. Nothing else of the text changes.
 * The result is parsed again and must equal the answer but for the markers, exactly where the
 * strings were; else (the string was escaped, a copy of it comes first, duplicate keys, the text is
 * not JSON) the text goes unchanged and the client decodes on its thread, as on a transport without
 * the worker: the same rows either way.
 *
 * @module
 */
import { createHash } from "node:crypto";
import {
  decodeNpyRoutes,
  decodeSglangRoutes,
  type ExpertDtype,
  type ExpertRows,
  type ExpertValues,
  fromBase64,
  type MoeShape,
  RoutesFormatError,
} from "./routed_experts.ts";

/** What a request asks the worker to read: which dialect's answer, for which model. */
export interface RoutesAsk {
  readonly reader: RoutesReaderName;
  readonly shape: Pick<MoeShape, "layers" | "topK" | "experts">;
  readonly dtype: ExpertDtype;
}

/** Rows a routes string held (their first position is the client's to say), or why none. */
export type DecodedRoutes =
  | {
    readonly rows: number;
    readonly values: ExpertValues;
    /** SHA-256 (hex) of the values' bytes. */
    readonly digest: string;
  }
  | { readonly error: string };

/** A field of a parsed answer holding (or meant to hold) a routes string. */
interface RoutesField {
  readonly holder: Record<string, unknown>;
  readonly key: string;
}

/** Where a dialect's answers carry routes strings, and how one decodes. */
interface RoutesReader {
  /** The fields of `answer` (a whole answer or a stream's chunk) that may hold routes. */
  fields(answer: unknown): RoutesField[];
  /** The rows of one routes string, from position 0. */
  decode(base64: string, ask: RoutesAsk): { rows: number; values: ExpertValues };
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** The dialects' readers, by the name a request gives. */
const READERS = {
  /** SGLang: `meta_info.routed_experts`, base64 of int32 (sglang_client.ts). */
  sglang: {
    fields: (answer) => {
      const meta = isObject(answer) ? answer.meta_info : undefined;
      return isObject(meta) ? [{ holder: meta, key: "routed_experts" }] : [];
    },
    decode: (base64, ask) => decodeSglangRoutes(base64, ask.shape, 0, ask.dtype),
  },
  /** vLLM: each choice's `routed_experts`, base64 of a `.npy` (vllm_client.ts). */
  vllm: {
    fields: (answer) => {
      const choices = isObject(answer) ? answer.choices : undefined;
      if (!Array.isArray(choices)) return [];
      return choices.filter(isObject).map((choice) => ({ holder: choice, key: "routed_experts" }));
    },
    decode: (base64, ask) => decodeNpyRoutes(fromBase64(base64), ask.shape, 0, ask.dtype),
  },
} satisfies Record<string, RoutesReader>;

export type RoutesReaderName = keyof typeof READERS;

/** An answer whose text does not hold this key carries no routes: it goes on unparsed. */
const NEEDLE = "routed_experts";

/** The text of an answer with its routes strings taken out, and what they held. */
export interface TakenRoutes {
  readonly text: string;
  readonly decoded: DecodedRoutes[];
}

/** The text of an answer with its routes strings replaced by markers, and those strings. */
export interface MarkedRoutes {
  readonly text: string;
  /** The strings the markers 0 .. stand for, in order. */
  readonly strings: readonly string[];
}

/**
 * `text` (an answer, or one stream event's data) with each routes string `ask`'s reader finds in
 * it decoded and replaced by its marker; `null` when it holds none, or when the replacement cannot
 * be shown to have changed those strings and nothing else.
 */
export function takeRoutes(text: string, ask: RoutesAsk, nonce: string): TakenRoutes | null {
  const marked = markRoutes(text, ask, nonce);
  return marked && { text: marked.text, decoded: decodeMarked(marked, ask) };
}

/**
 * `text` with each routes string `ask`'s reader finds in it replaced by its marker, the strings
 * beside it (what {@linkcode takeRoutes} does but decoding them, left to {@linkcode decodeMarked}
 * so the text can go on first); `null` as for `takeRoutes`.
 */
export function markRoutes(text: string, ask: RoutesAsk, nonce: string): MarkedRoutes | null {
  if (!text.includes(NEEDLE)) return null;
  const reader: RoutesReader = READERS[ask.reader];
  let answer: unknown;
  try {
    answer = JSON.parse(text);
  } catch {
    return null;
  }
  const fields = reader.fields(answer).filter(({ holder, key }) => typeof holder[key] === "string");
  if (fields.length === 0) return null;
  const strings = fields.map(({ holder, key }) => holder[key] as string);
  // Each string's quoted text, the first found after the one before.
  const pieces: string[] = [];
  let at = 0;
  for (const [k, value] of strings.entries()) {
    const found = text.indexOf(`"${value}"`, at);
    if (found < 0) return null;
    pieces.push(text.slice(at, found), marker(k, nonce));
    at = found + value.length + 2;
  }
  pieces.push(text.slice(at));
  const taken = pieces.join("");
  if (!onlyRoutesTaken(answer, taken, reader, nonce, strings)) return null;
  return { text: taken, strings };
}

/** The rows each string `marked` took out holds, in its markers' order. */
export function decodeMarked(marked: MarkedRoutes, ask: RoutesAsk): DecodedRoutes[] {
  const reader: RoutesReader = READERS[ask.reader];
  return marked.strings.map((value) => decodeOne(reader, value, ask));
}

function marker(k: number, nonce: string): string {
  return `{"$routes":${k},"nonce":"${nonce}"}`;
}

/**
 * `taken` parses to `answer` exactly but for the reader's fields, which hold the markers 0 ..
 * in order where `answer` held `strings`.
 */
function onlyRoutesTaken(
  answer: unknown,
  taken: string,
  reader: RoutesReader,
  nonce: string,
  strings: readonly string[],
): boolean {
  let parsed: unknown;
  try {
    parsed = JSON.parse(taken);
  } catch {
    return false;
  }
  const fields = reader.fields(parsed).filter(({ holder, key }) =>
    markerIndex(holder[key], nonce) !== null
  );
  if (fields.length !== strings.length) return false;
  for (const [k, { holder, key }] of fields.entries()) {
    if (markerIndex(holder[key], nonce) !== k) return false;
    holder[key] = strings[k];
  }
  try {
    return sameJson(parsed, answer);
  } catch {
    return false; // nested past the stack (JSON.parse is not bounded so): the client's to read
  }
}

/** Two parsed JSON values are the same: equal primitives (-0 apart from 0), keys in order. */
function sameJson(a: unknown, b: unknown): boolean {
  if (typeof a !== "object" || a === null || typeof b !== "object" || b === null) {
    return Object.is(a, b);
  }
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const aKeys = Object.keys(a);
  const bKeys = Object.keys(b);
  if (aKeys.length !== bKeys.length) return false;
  const x = a as Record<string, unknown>;
  const y = b as Record<string, unknown>;
  return aKeys.every((key, i) => key === bKeys[i] && sameJson(x[key], y[key]));
}

/** The index a marker names, `null` for anything else (a marker of another nonce too). */
export function markerIndex(value: unknown, nonce: string): number | null {
  if (!isObject(value) || value.nonce !== nonce) return null;
  const k = value.$routes;
  return Number.isInteger(k) && Object.keys(value).length === 2 ? k as number : null;
}

function decodeOne(reader: RoutesReader, base64: string, ask: RoutesAsk): DecodedRoutes {
  try {
    const { rows, values } = reader.decode(base64, ask);
    return { rows, values, digest: sha256Hex(values) };
  } catch (error) {
    if (error instanceof RoutesFormatError) return { error: error.message };
    throw error;
  }
}

/**
 * The rows a field of a parsed answer holds, from `start`: `decode` of its string (read on this
 * thread), or the rows decoded on the worker its marker names (`decoded`, the body's: they follow
 * the text); `null` for anything else.
 *
 * @throws {RoutesFormatError} for rows that do not decode (here or on the worker).
 */
export async function fieldRoutes(
  value: unknown,
  decoded: ((value: unknown) => Promise<DecodedRoutes> | undefined) | undefined,
  start: number,
  decode: (base64: string) => ExpertRows,
): Promise<ExpertRows | null> {
  if (typeof value === "string") return decode(value);
  const coming = decoded?.(value);
  if (coming === undefined) return null;
  const rows = await coming;
  if ("error" in rows) throw new RoutesFormatError(rows.error);
  return { start, rows: rows.rows, values: rows.values, digest: rows.digest };
}

/** SHA-256 of `values`' bytes as hex (node:crypto's, at once: the worker's answer waits on it). */
export function sha256Hex(values: ExpertValues): string {
  return createHash("sha256")
    .update(new Uint8Array(values.buffer, values.byteOffset, values.byteLength))
    .digest("hex");
}
