/**
 * An image a client sent, checked before anything is done with it: its format from its bytes
 * (PNG, JPEG, WebP, GIF; what the client declared is not trusted), its pixel size from its header
 * (`image-size`, maintained, no dependencies), its length, and its identity (the SHA-256 of its
 * bytes: an echoed image is the same image, a changed one another). Bounds are the caller's.
 *
 * @module
 */
import { Buffer } from "node:buffer";
import { createHash } from "node:crypto";
import { imageSize } from "image-size";
import type { CodedError } from "../errors/mod.ts";

/** The formats a vision model is given, by `image-size`'s name for them. */
export const IMAGE_FORMATS = {
  png: "image/png",
  jpg: "image/jpeg",
  webp: "image/webp",
  gif: "image/gif",
} as const;

/** How large an image may be. */
export interface ImageLimits {
  /** Most bytes of one image (decoded). */
  readonly maxBytes: number;
  /** Most pixels (width × height) of one image. */
  readonly maxPixels: number;
}

/** An image that passed its checks. */
export interface ProbedImage {
  readonly mediaType: (typeof IMAGE_FORMATS)[keyof typeof IMAGE_FORMATS];
  readonly width: number;
  readonly height: number;
  readonly bytes: number;
  /** SHA-256 of its bytes, 64 hex digits. */
  readonly digest: string;
  /** Its bytes as base64, as they came (what the engine is sent). */
  readonly base64: string;
}

/** Why an image is refused: `too_large` is a 413, the others 400s. */
export type ImageProblem =
  | "not_base64"
  | "too_large"
  | "too_many"
  | "not_an_image"
  | "format"
  | "pixels";

/** An image refused at the edge: `too_large` and `too_many` answer 413, any other problem 400. */
export class ImageRefusedError extends Error implements CodedError {
  readonly code: "image_too_large" | "invalid_image";
  constructor(readonly problem: ImageProblem, message: string) {
    super(message);
    this.name = "ImageRefusedError";
    this.code = problem === "too_large" || problem === "too_many"
      ? "image_too_large"
      : "invalid_image";
  }

  /** The same refusal, its message led by the request field it is about. */
  at(field: string): ImageRefusedError {
    return new ImageRefusedError(this.problem, `${field}: ${this.message}`);
  }
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/**
 * Checks a base64 image against `limits`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { probeImage } from "./image_probe.ts";
 * // A 2×3 PNG.
 * const data = "iVBORw0KGgoAAAANSUhEUgAAAAIAAAADCAIAAAA2iEnWAAAAEElEQVR4nGP4z8DAwMDAAAAP/gH/lpL+4gAAAABJRU5ErkJggg==";
 * const image = probeImage(data, { maxBytes: 1 << 20, maxPixels: 1 << 24 });
 * assert.deepEqual([image.mediaType, image.width, image.height, image.bytes], ["image/png", 2, 3, 73]);
 * ```
 * @throws {ImageRefusedError} for text that is not base64, an image past `limits`, bytes that
 * are no image, or a format other than PNG, JPEG, WebP and GIF.
 */
export function probeImage(base64: string, limits: ImageLimits): ProbedImage {
  // Checked before decoding: its length bounds the work.
  if (Math.floor(base64.length * 3 / 4) > limits.maxBytes + 2) {
    throw new ImageRefusedError("too_large", `an image is larger than ${limits.maxBytes} bytes`);
  }
  if (base64.length % 4 !== 0 || !BASE64.test(base64)) {
    throw new ImageRefusedError("not_base64", "an image's data is not base64");
  }
  const bytes = Buffer.from(base64, "base64");
  if (bytes.length > limits.maxBytes) {
    throw new ImageRefusedError("too_large", `an image is larger than ${limits.maxBytes} bytes`);
  }
  let size: ReturnType<typeof imageSize>;
  try {
    size = imageSize(bytes);
  } catch {
    throw new ImageRefusedError("not_an_image", "an image's data is no image this gateway reads");
  }
  const mediaType = size.type && Object.hasOwn(IMAGE_FORMATS, size.type)
    ? IMAGE_FORMATS[size.type as keyof typeof IMAGE_FORMATS]
    : null;
  if (mediaType === null) {
    throw new ImageRefusedError(
      "format",
      `an image is ${size.type ?? "of an unknown format"}; PNG, JPEG, WebP and GIF are read`,
    );
  }
  const { width, height } = size;
  if (!(width > 0) || !(height > 0)) {
    throw new ImageRefusedError("not_an_image", "an image has no pixel size");
  }
  if (width * height > limits.maxPixels) {
    throw new ImageRefusedError(
      "pixels",
      `an image of ${width}×${height} pixels is more than ${limits.maxPixels} pixels`,
    );
  }
  const digest = createHash("sha256").update(bytes).digest("hex");
  return { mediaType, width, height, bytes: bytes.length, digest, base64 };
}

/** Images already probed, by the request object that held them (a request is probed once). */
const probedSources = new WeakMap<object, ProbedImage>();

/**
 * {@linkcode probeImage} of `base64`, remembered by `holder` (the request object it came in): a
 * protocol adapter that checks an image to name its own field, and the lowering after it, pay
 * for one decode and one digest.
 */
export function probeImageOf(holder: object, base64: string, limits: ImageLimits): ProbedImage {
  const known = probedSources.get(holder);
  if (known !== undefined && known.base64 === base64) return known;
  const image = probeImage(base64, limits);
  probedSources.set(holder, image);
  return image;
}
