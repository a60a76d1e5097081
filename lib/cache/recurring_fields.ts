/**
 * The top-level fields of a JSON body that an agent sends again, byte for byte, on every turn —
 * its tools, its system prompt: 38 KB of a Claude Code request whose new text is a few KB. They
 * are parsed, checked and validated once per text, not once per turn, and what is computed from
 * them (their digest, their lowered form) is computed once too (docs/DESIGN.md §3.2).
 *
 * A field is found where it was last time, counted from the start of the body or from its end
 * (fields before it keep their length from turn to turn, or those after it do), after its own
 * key, and the body is parsed with a placeholder in its place: each found field has a placeholder
 * of its own, unguessable, so the parse proves that each field's text was that top-level field's
 * whole value — not another field's, not a nested value, not a field a later one of the same name
 * overrides. A body that does not match is parsed whole, as it always was. Values held here are
 * deep-frozen and shared by every request that sends them.
 *
 * @module
 */
import type { CacheStats } from "./weighted_lru.ts";

/** One process's secret: a client cannot write a placeholder or a token it does not know. */
const NONCE = crypto.randomUUID().replaceAll("-", "");

/**
 * What stands for the `index`th field found in a body while the rest of it is parsed: one per
 * field, so that the parse tells which field's text stood where.
 */
function placeholder(index: number): string {
  return `recurring-field-${NONCE}-${index}`;
}

/** Each held value, and what is derived from one, by identity: its token. */
const tokens = new WeakMap<object, string>();
let nextToken = 0;
/** What {@linkcode derivedOnce} computed from a held value, by the function that computed it. */
const derivations = new WeakMap<object, Map<(value: never) => unknown, unknown>>();

/**
 * A short string that stands for a held value (or one derived from it) in a cache key: the same
 * object gives the same token, a value not held gives `undefined`. Tokens hold the process's
 * secret, so a client's string never equals one.
 */
export function recurringToken(value: unknown): string | undefined {
  return typeof value === "object" && value !== null ? tokens.get(value) : undefined;
}

/** Marks `value` as held, deep-frozen: its token from now on. */
function hold<T>(value: T): T {
  deepFreeze(value);
  if (typeof value === "object" && value !== null && !tokens.has(value)) {
    tokens.set(value, `recurring:${NONCE}:${nextToken++}`);
  }
  return value;
}

/** Freezes `value` and everything in it (what is frozen already is taken as done). */
function deepFreeze(value: unknown): void {
  const stack = [value];
  while (stack.length > 0) {
    const item = stack.pop();
    if (typeof item !== "object" || item === null || Object.isFrozen(item)) continue;
    Object.freeze(item);
    for (const child of Array.isArray(item) ? item : Object.values(item)) stack.push(child);
  }
}

/**
 * `derive(value)`, computed once for a held value (later calls get the same result, frozen and
 * held too) and every time for any other. `derive` must depend on nothing but `value`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { derivedOnce } from "./recurring_fields.ts";
 * const names = (tools: readonly { name: string }[]) => tools.map((tool) => tool.name);
 * const fresh = [{ name: "Bash" }];
 * assert.notEqual(derivedOnce(fresh, names), derivedOnce(fresh, names)); // not held: each time
 * ```
 */
export function derivedOnce<T extends object, R>(value: T, derive: (value: T) => R): R {
  if (!tokens.has(value)) return derive(value);
  let known = derivations.get(value);
  if (!known) derivations.set(value, known = new Map());
  if (known.has(derive)) return known.get(derive) as R;
  const result = hold(derive(value));
  known.set(derive, result);
  return result;
}

/** A field's text as held: its parsed value and its validated forms. */
export class RecurringValue {
  readonly #validated = new WeakMap<object, { readonly data: unknown } | null>();
  /** Where the value began in the body it was last found in, from the start and from the end. */
  fromStart: number;
  fromEnd: number;

  constructor(
    /** The field's name. */
    readonly key: string,
    /** The value's JSON text, exactly as clients send it. */
    readonly text: string,
    /** The parsed value, deep-frozen. */
    readonly value: unknown,
    at: number,
    bodyLength: number,
  ) {
    this.fromStart = at;
    this.fromEnd = bodyLength - at;
  }

  /**
   * The value as `schema` validates it (`check` runs once per schema; its result is held, frozen),
   * or `null` when it fails.
   */
  validated<T>(
    schema: object,
    check: (value: unknown) => { success: true; data: T } | { success: false },
  ): { readonly data: T } | null {
    let known = this.#validated.get(schema);
    if (known === undefined) {
      const result = check(this.value);
      known = result.success ? { data: hold(result.data) } : null;
      this.#validated.set(schema, known);
    }
    return known as { readonly data: T } | null;
  }
}

/** A body parsed by {@linkcode RecurringFields.parse}. */
export interface RecurringParse {
  /** The body, as `JSON.parse` gives it; the fields held carry the held (frozen) values. */
  readonly value: unknown;
  /** The fields whose value is held, by name. */
  readonly held: ReadonlyMap<string, RecurringValue>;
}

/** Bounds of {@linkcode RecurringFields}. */
export interface RecurringFieldsOptions {
  /**
   * Bytes of held values in all (their text and parsed value, {@linkcode HELD_BYTES_PER_CHAR} a
   * character); the least recently used goes first.
   */
  readonly capacityBytes: number;
  /** A value of fewer characters is parsed each time: cheap anyway. */
  readonly minChars: number;
  /** Values held at most (each body's search looks at each). */
  readonly maxValues: number;
  /**
   * Whether a field's value has the shape every body must have, checked as a top-level field
   * (nesting, `__proto__` keys): only such a value is held, and it is not checked again.
   */
  readonly accepts: (value: object) => boolean;
}

/** A field's value found in a body: where it starts. */
interface Found {
  readonly held: RecurringValue;
  readonly at: number;
}

/**
 * Bytes a held value takes per character of its text: the text (two bytes a character once it
 * holds one outside Latin-1) and its parsed, frozen value (1.8 bytes a character measured on
 * Claude Code's 31 KB tool list).
 */
export const HELD_BYTES_PER_CHAR = 4;

/** Bodies in a row, per field, whose value could not be found in their text before learning pauses. */
const LEARN_TRIES = 4;
/** While paused, one body in this many tries again. */
const LEARN_EVERY = 64;

/**
 * Held values of recurring top-level fields, up to a total of `capacityBytes` bytes (their text
 * and parsed values).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { RecurringFields } from "./recurring_fields.ts";
 * const memo = new RecurringFields({
 *   capacityBytes: 1 << 20,
 *   minChars: 8,
 *   maxValues: 8,
 *   accepts: () => true,
 * });
 * const tools = JSON.stringify([{ name: "Bash", input_schema: { type: "object" } }]);
 * const first = memo.parse(`{"tools":${tools},"messages":["hi"]}`, ["tools"]);
 * const next = memo.parse(`{"tools":${tools},"messages":["hi","there"]}`, ["tools"]);
 * assert.deepEqual(next.value, JSON.parse(`{"tools":${tools},"messages":["hi","there"]}`));
 * assert.equal((next.value as { tools: unknown }).tools, (first.value as { tools: unknown }).tools);
 * assert.ok(Object.isFrozen((next.value as { tools: unknown }).tools));
 * ```
 */
export class RecurringFields {
  /** Most recently used first. */
  #values: RecurringValue[] = [];
  #chars = 0;
  /** Bodies in a row whose field could not be learned, by field. */
  readonly #unlearned = new Map<string, number>();
  /** Fields taken from a held value, and fields parsed (whether learned then or not). */
  #hits = 0;
  #misses = 0;

  constructor(readonly options: RecurringFieldsOptions) {}

  /** How many values are held, and their characters (for tests). */
  get size(): { values: number; chars: number } {
    return { values: this.#values.length, chars: this.#chars };
  }

  /**
   * What it holds (characters of text; bytes: the text and its parsed value, about 4 a character,
   * measured on Claude Code's tools) and how it was used (fields taken from a held value, fields
   * parsed).
   */
  stats(): CacheStats {
    return {
      held: this.#chars,
      capacity: this.options.capacityBytes,
      bytes: HELD_BYTES_PER_CHAR * this.#chars,
      hits: this.#hits,
      misses: this.#misses,
    };
  }

  /**
   * `JSON.parse(text)`, with the values of the top-level fields `keys` taken from those held when
   * their text is, and learned when not. Throws `JSON.parse`'s own error for a body that is not
   * JSON.
   */
  parse(text: string, keys: readonly string[]): RecurringParse {
    const found: Found[] = [];
    for (const key of keys) {
      const hit = this.#find(text, key, found);
      if (hit) found.push(hit);
    }
    const patched = found.length > 0 ? parsePatched(text, found) : null;
    const value = patched ?? JSON.parse(text);
    const held = new Map<string, RecurringValue>();
    if (patched) {
      for (const { held: field, at } of found) {
        patched[field.key] = field.value;
        field.fromStart = at;
        field.fromEnd = text.length - at;
        this.#use(field);
        held.set(field.key, field);
      }
    }
    this.#hits += held.size;
    this.#misses += keys.length - held.size;
    if (held.size < keys.length) this.#learn(text, value, keys, held);
    return { value, held };
  }

  /**
   * The held value of `key` found where it was last time, after `"key":`, clear of the fields
   * found already. Only a candidate: the patched parse proves it.
   */
  #find(text: string, key: string, found: readonly Found[]): Found | null {
    const name = JSON.stringify(key);
    for (const held of this.#values) {
      if (held.key !== key) continue;
      for (const at of [held.fromStart, text.length - held.fromEnd]) {
        if (
          at > 0 && text.startsWith(held.text, at) && keyBefore(text, at, name) &&
          !found.some((other) => overlaps(other, at, held.text.length))
        ) return { held, at };
      }
    }
    return null;
  }

  /**
   * Holds the values of `keys` not `held` yet, when their text is found in the body as it
   * serializes (a client that writes compact JSON); adds them to `held`.
   */
  #learn(text: string, body: unknown, keys: readonly string[], held: Map<string, RecurringValue>) {
    if (typeof body !== "object" || body === null || Array.isArray(body)) return;
    const record = body as Record<string, unknown>;
    for (const key of keys) {
      if (held.has(key) || !Object.hasOwn(record, key)) continue;
      const value = record[key];
      if (typeof value !== "object" || value === null) continue;
      const misses = this.#unlearned.get(key) ?? 0;
      if (misses >= LEARN_TRIES && misses % LEARN_EVERY !== 0) {
        this.#unlearned.set(key, misses + 1);
        continue;
      }
      const json = JSON.stringify(value);
      // A value of more than a quarter of the capacity would push out the others.
      const { minChars, capacityBytes } = this.options;
      if (json.length < minChars || HELD_BYTES_PER_CHAR * json.length > capacityBytes / 4) continue;
      const field = this.#learnField(text, key, value, json);
      this.#unlearned.set(key, field ? 0 : misses + 1);
      if (!field) continue;
      record[key] = field.value;
      held.set(key, field);
    }
  }

  /**
   * The held value for field `key` of `text`, whose parsed value is `value` and serializes as
   * `json`; `null` when that text is not in the body (or the value is out of shape).
   */
  #learnField(text: string, key: string, value: object, json: string): RecurringValue | null {
    const at = locate(text, key, json);
    if (at < 0 || !this.options.accepts(value)) return null;
    const known = this.#values.find((held) => held.key === key && held.text === json);
    if (known) {
      known.fromStart = at;
      known.fromEnd = text.length - at;
      this.#use(known);
      return known;
    }
    const field = new RecurringValue(key, json, hold(value), at, text.length);
    this.#values.unshift(field);
    this.#chars += json.length;
    const { capacityBytes, maxValues } = this.options;
    while (HELD_BYTES_PER_CHAR * this.#chars > capacityBytes || this.#values.length > maxValues) {
      this.#chars -= this.#values.pop()!.text.length;
    }
    return field;
  }

  /** Moves `field` to the front. */
  #use(field: RecurringValue): void {
    const index = this.#values.indexOf(field);
    if (index > 0) {
      this.#values.splice(index, 1);
      this.#values.unshift(field);
    }
  }
}

const COLON = 58;

/**
 * Whether the value at `at` follows `name` (a key as JSON, quoted) and a colon, whitespace
 * allowed around the colon.
 */
function keyBefore(text: string, at: number, name: string): boolean {
  let i = at - 1;
  while (i > 0 && isSpace(text.charCodeAt(i))) i--;
  if (text.charCodeAt(i) !== COLON) return false;
  i--;
  while (i > 0 && isSpace(text.charCodeAt(i))) i--;
  return i + 1 >= name.length && text.startsWith(name, i + 1 - name.length);
}

function overlaps(other: Found, at: number, length: number): boolean {
  return at < other.at + other.held.text.length && other.at < at + length;
}

/**
 * The body with each found field's text replaced by its own placeholder, parsed; `null` unless it
 * parses to an object whose field of each found field's name (the last of that name, as
 * `JSON.parse` keeps) is that field's placeholder: then the text found was that top-level field's
 * whole value. A placeholder appears nowhere else (a client cannot write one), so a field holding
 * another's placeholder, or a nested one, or one overridden by a later field, fails the check.
 */
function parsePatched(text: string, found: Found[]): Record<string, unknown> | null {
  const spans = found.map((field, index) => ({ ...field, index })).sort((a, b) => a.at - b.at);
  let patched = "";
  let from = 0;
  for (const { held, at, index } of spans) {
    patched += `${text.slice(from, at)}"${placeholder(index)}"`;
    from = at + held.text.length;
  }
  patched += text.slice(from);
  let value: unknown;
  try {
    value = JSON.parse(patched);
  } catch {
    return null;
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) return null;
  const record = value as Record<string, unknown>;
  return found.every(({ held }, index) =>
      Object.hasOwn(record, held.key) && record[held.key] === placeholder(index)
    )
    ? record
    : null;
}

/**
 * Where `"key":json` (whitespace allowed around the colon) starts its value in `text`, the last
 * such place; -1 when there is none.
 */
function locate(text: string, key: string, json: string): number {
  const probe = json.slice(0, 64);
  const name = JSON.stringify(key);
  for (let at = text.lastIndexOf(probe); at > 0; at = text.lastIndexOf(probe, at - 1)) {
    if (text.startsWith(json, at) && keyBefore(text, at, name)) return at;
  }
  return -1;
}

function isSpace(code: number): boolean {
  return code === 32 || code === 10 || code === 13 || code === 9;
}
