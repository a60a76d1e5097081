/**
 * JSON bodies as bytes, with pieces `JSON.stringify` cannot write: numbers past float64
 * (`1e309`), `-0`, 2^53+1 as written, nesting thousands of levels deep, invalid UTF-8 inside a
 * string, duplicate keys. A fuzzed body is a tree of plain values and {@linkcode Raw} pieces.
 *
 * @module
 */

/** A piece of JSON text sent exactly as written: `text`, or `bytes` that need not be UTF-8. */
export class Raw {
  constructor(
    readonly text: string | null,
    readonly bytes: Uint8Array | null,
    readonly label: string,
  ) {}
}

/** A piece of JSON text sent as written; `label` names it in reports. */
export function raw(text: string, label?: string): Raw {
  return new Raw(text, null, label ?? preview(text, 40));
}

/** A JSON string literal holding bytes that are not UTF-8 (`\xff`, a lone continuation byte…). */
export function invalidUtf8String(prng: { pick<T>(items: readonly T[]): T }): Raw {
  const bad = prng.pick([
    [0xff],
    [0xfe, 0xff],
    [0xc3, 0x28], // a two-byte lead followed by ASCII
    [0x80], // a lone continuation byte
    [0xed, 0xa0, 0x80], // a UTF-16 surrogate encoded as UTF-8
    [0xf4, 0x90, 0x80, 0x80], // past U+10FFFF
    [0xc0, 0xaf], // an overlong '/'
    [0xe2, 0x82], // truncated
  ]);
  return new Raw(null, new Uint8Array([0x22, 0x61, ...bad, 0x62, 0x22]), `invalid UTF-8 ${bad}`);
}

/** `depth` nested arrays or objects around `leaf`, as text (no recursion anywhere). */
export function deepNesting(depth: number, kind: "array" | "object", leaf = "1"): Raw {
  const text = kind === "array"
    ? "[".repeat(depth) + leaf + "]".repeat(depth)
    : '{"a":'.repeat(depth) + leaf + "}".repeat(depth);
  return raw(text, `${kind} nested ${depth} deep`);
}

/** The bytes of `value` as JSON, {@linkcode Raw} pieces written as they are. */
export function encodeJson(value: unknown): Uint8Array<ArrayBuffer> {
  const encoder = new TextEncoder();
  const chunks: Uint8Array[] = [];
  let text: string[] = [];
  const flush = () => {
    if (text.length > 0) chunks.push(encoder.encode(text.join("")));
    text = [];
  };
  // An explicit stack: bodies built by the mutator may hold long arrays.
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const item = stack.pop();
    if (item instanceof Token) {
      text.push(item.text);
    } else if (item instanceof Raw) {
      if (item.text !== null) text.push(item.text);
      else {
        flush();
        chunks.push(item.bytes!);
      }
    } else if (Array.isArray(item)) {
      stack.push(CLOSE_ARRAY);
      for (let i = item.length - 1; i >= 0; i--) {
        stack.push(item[i]);
        if (i > 0) stack.push(COMMA);
      }
      text.push("[");
    } else if (typeof item === "object" && item !== null) {
      const keys = Object.keys(item);
      stack.push(CLOSE_OBJECT);
      for (let i = keys.length - 1; i >= 0; i--) {
        stack.push((item as Record<string, unknown>)[keys[i]]);
        stack.push(new Token(`${i > 0 ? "," : ""}${JSON.stringify(keys[i])}:`));
      }
      text.push("{");
    } else {
      text.push(JSON.stringify(item) ?? "null");
    }
  }
  flush();
  const out = new Uint8Array(chunks.reduce((sum, chunk) => sum + chunk.length, 0));
  let at = 0;
  for (const chunk of chunks) {
    out.set(chunk, at);
    at += chunk.length;
  }
  return out;
}

/** Punctuation pushed on the writer's stack. */
class Token {
  constructor(readonly text: string) {}
}
const COMMA = new Token(",");
const CLOSE_ARRAY = new Token("]");
const CLOSE_OBJECT = new Token("}");

/** A copy of a JSON value, keeping {@linkcode Raw} pieces and own `__proto__` keys. */
export function cloneJson<T>(value: T): T {
  if (value instanceof Raw || typeof value !== "object" || value === null) return value;
  if (Array.isArray(value)) return value.map(cloneJson) as T;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value)) setKey(out, key, cloneJson((value as never)[key]));
  return out as T;
}

/** Sets `key` as an own, enumerable property, even when it is `__proto__`. */
export function setKey(object: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(object, key, {
    value,
    enumerable: true,
    writable: true,
    configurable: true,
  });
}

/** `text` cut to `max` characters, with its length when cut. */
export function preview(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}…(${text.length} chars)`;
}
