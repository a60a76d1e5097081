/**
 * What a model that reads only text is told in place of an image or a document
 * (`IMAGE_POLICY=placeholder`): a short text naming its kind, format and size, never its bytes.
 * Sources are in the Messages shape, which the OpenAI adapters translate theirs into
 * ({@linkcode sourceFromUrl}); the pixel size is read from the image's header with `image-size`
 * (maintained, no dependencies), the format as detected there, else as declared.
 *
 * @module
 */
import { Buffer } from "node:buffer";
import { imageSize } from "image-size";

/**
 * Base64 characters of an image decoded to find its pixel size: the header of any PNG, GIF or
 * WebP, and of a JPEG whose metadata before its frame header is smaller than ~190 KB. Past it
 * the size is left out, so a large image costs no more than this.
 */
const HEADER_BASE64_CHARS = 256 * 1024;

/** A media type as a client may declare one; anything else is not repeated to the model. */
const MEDIA_TYPE = /^[a-z0-9][a-z0-9.+-]{0,63}\/[a-z0-9][a-z0-9.+-]{0,63}$/i;

/** A `data:` URL with base64 content. */
const DATA_URL = /^data:([^;,]{0,128})(?:;[^;,]{0,128})*;base64,/i;

/**
 * The text in place of an image or document block.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { mediaPlaceholder } from "./media.ts";
 * // A 2×3 PNG, as Claude Code's Read of an image sends it.
 * const data = "iVBORw0KGgoAAAANSUhEUgAAAAIAAAADCAIAAAA2iEnWAAAAEElEQVR4nGP4z8DAwMDAAAAP/gH/lpL+4gAAAABJRU5ErkJggg==";
 * assert.equal(
 *   mediaPlaceholder({ type: "image", source: { type: "base64", media_type: "image/png", data } }),
 *   "[image omitted (PNG, 2×3 pixels, 73 bytes): the served model reads text only]",
 * );
 * assert.equal(
 *   mediaPlaceholder({ type: "image", source: { type: "url", url: "https://example.com/a.png" } }),
 *   "[image omitted (at a URL): the served model reads text only]",
 * );
 * ```
 */
export function mediaPlaceholder(block: { type: string; source?: unknown }): string {
  const kind = block.type === "image" ? "image" : "document";
  const what = describe(block.source, kind);
  return `[${kind} omitted${what ? ` (${what})` : ""}: the served model reads text only]`;
}

/**
 * A source in the Messages shape for an OpenAI image or file URL: a `data:` URL's base64 content
 * with its media type, any other URL as a URL (never fetched).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { sourceFromUrl } from "./media.ts";
 * assert.deepEqual(sourceFromUrl("data:image/png;base64,iVBORw0KGgo="), {
 *   type: "base64",
 *   media_type: "image/png",
 *   data: "iVBORw0KGgo=",
 * });
 * assert.deepEqual(sourceFromUrl("https://example.com/a.png"), {
 *   type: "url",
 *   url: "https://example.com/a.png",
 * });
 * ```
 */
export function sourceFromUrl(url: string): Record<string, string> {
  const data = DATA_URL.exec(url);
  if (!data) return { type: "url", url };
  return { type: "base64", media_type: data[1], data: url.slice(data[0].length) };
}

/** The format and size of a source, or what kind of reference it is; `""` when unknown. */
function describe(source: unknown, kind: "image" | "document"): string {
  if (typeof source !== "object" || source === null) return "";
  const { type } = source as { type?: unknown };
  if (type === "url") return "at a URL";
  if (type === "file") return "a file reference";
  if (type === "text" || type === "content") return "text";
  if (type !== "base64") return "";
  const { media_type: declared, data } = source as { media_type?: unknown; data?: unknown };
  if (typeof data !== "string") return "";
  const parts: string[] = [];
  const pixels = kind === "image" ? pixelSize(data) : null;
  const format = pixels?.format ??
    (typeof declared === "string" && MEDIA_TYPE.test(declared) ? declared.toLowerCase() : null);
  if (format) parts.push(format);
  if (pixels) parts.push(`${pixels.width}×${pixels.height} pixels`);
  const bytes = base64Bytes(data);
  parts.push(`${bytes} byte${bytes === 1 ? "" : "s"}`);
  return parts.join(", ");
}

/** The format and pixel size read from an image's header, or `null` when it cannot be read. */
function pixelSize(data: string): { format: string; width: number; height: number } | null {
  const head = data.length <= HEADER_BASE64_CHARS
    ? data
    : data.slice(0, HEADER_BASE64_CHARS - (HEADER_BASE64_CHARS % 4));
  try {
    const size = imageSize(Buffer.from(head, "base64"));
    if (!size.type || !(size.width > 0) || !(size.height > 0)) return null;
    return { format: size.type.toUpperCase(), width: size.width, height: size.height };
  } catch {
    return null; // not an image this library knows, or its header lies past what was decoded
  }
}

/** How many bytes base64 text decodes to (its length less padding; clients send no whitespace). */
function base64Bytes(data: string): number {
  let end = data.length;
  while (end > 0 && data.charCodeAt(end - 1) === 61) end--; // "="
  return Math.floor(end * 3 / 4);
}
