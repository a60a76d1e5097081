/**
 * How many tokens a vision-language model gives an image (issue 38's first part): Qwen's
 * vision processors (Qwen2-VL, Qwen2.5-VL, Qwen3-VL, Qwen3.5) resize an image to multiples of
 * `patch_size × merge_size` within a pixel budget (`smart_resize`), cut it into patches, and merge
 * `merge_size²` patches into one token, so an image of `h × w` pixels stands as
 * `(h' / patch) × (w' / patch) / merge²` `<|image_pad|>` tokens in the prompt.
 *
 * The settings come from the model folder's `preprocessor_config.json`, as the engine reads them.
 * The resize is Hugging Face's Python `smart_resize` (`image_processing_qwen2_vl.py`), which the
 * engine runs: Python's `round` takes halves to the even neighbour. `@huggingface/transformers`
 * has the same function but rounds halves up (`Math.round`), so for a side of an odd number of
 * half factors (80 pixels at factor 32) it gives another size, another token count, and the
 * engine would refuse the prompt: the formula is kept here, with Python's rounding. It is the
 * newer releases' (an image over the budget keeps at least one factor a side; older releases did
 * not, and refused sides under 10 pixels): only those edge cases depend on the engine's version.
 *
 * @module
 */

/** A Qwen vision processor's settings (`preprocessor_config.json`). */
export interface VisionSettings {
  /** Pixels per patch side (14 for Qwen2/2.5-VL, 16 for Qwen3-VL). */
  readonly patchSize: number;
  /** Patches per merged token side (2). */
  readonly mergeSize: number;
  /** Fewest pixels an image is resized to. */
  readonly minPixels: number;
  /** Most pixels an image is resized to. */
  readonly maxPixels: number;
}

/** An image as the model sees it: resized, cut into patches, merged into tokens. */
export interface ImageGrid {
  readonly width: number;
  readonly height: number;
  /** Patches across and down (`image_grid_thw`'s last two). */
  readonly gridW: number;
  readonly gridH: number;
  /** `<|image_pad|>` tokens the image stands as. */
  readonly tokens: number;
}

/** The settings are not a Qwen vision processor's, or an image cannot be given tokens. */
export class VisionError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "VisionError";
  }
}

/** Images wider than tall (or taller than wide) past this ratio are refused, as the engine does. */
export const MAX_ASPECT_RATIO = 200;

/**
 * The settings in a `preprocessor_config.json`'s text: `patch_size`, `merge_size`, and the pixel
 * budget as `min_pixels`/`max_pixels` (Qwen2/2.5-VL) or `size.shortest_edge`/`size.longest_edge`
 * (Qwen3-VL, where they count pixels too).
 *
 * @throws {VisionError} naming the setting that is missing or not a positive integer.
 */
export function visionSettings(text: string): VisionSettings {
  let config: Record<string, unknown>;
  try {
    config = JSON.parse(text);
  } catch (error) {
    throw new VisionError(`preprocessor_config.json is not JSON: ${(error as Error).message}`);
  }
  const size = (config.size ?? {}) as Record<string, unknown>;
  const read = (name: string, value: unknown): number => {
    if (typeof value !== "number" || !Number.isInteger(value) || value <= 0) {
      throw new VisionError(`preprocessor_config.json: ${name} must be a positive integer`);
    }
    return value;
  };
  const settings = {
    patchSize: read("patch_size", config.patch_size),
    mergeSize: read("merge_size", config.merge_size),
    minPixels: read("min_pixels", config.min_pixels ?? size.shortest_edge),
    maxPixels: read("max_pixels", config.max_pixels ?? size.longest_edge),
  };
  if (settings.minPixels > settings.maxPixels) {
    throw new VisionError("preprocessor_config.json: min_pixels is more than max_pixels");
  }
  return settings;
}

/**
 * The grid and token count of a `width × height` image under `settings`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { imageGrid } from "./image_grid.ts";
 * const qwen3vl = { patchSize: 16, mergeSize: 2, minPixels: 65_536, maxPixels: 16_777_216 };
 * // 640 × 480 is already a multiple of 32: 40 × 30 patches, merged 2 × 2.
 * assert.deepEqual(imageGrid(qwen3vl, 640, 480), {
 *   width: 640, height: 480, gridW: 40, gridH: 30, tokens: 300,
 * });
 * ```
 * @throws {VisionError} for a side that is not a positive integer, or an aspect ratio past 200.
 */
export function imageGrid(settings: VisionSettings, width: number, height: number): ImageGrid {
  if (!Number.isInteger(width) || !Number.isInteger(height) || width <= 0 || height <= 0) {
    throw new VisionError(`an image must have a positive size, not ${width}×${height}`);
  }
  if (Math.max(width, height) / Math.min(width, height) > MAX_ASPECT_RATIO) {
    throw new VisionError(
      `an image's aspect ratio must be at most ${MAX_ASPECT_RATIO}, not ${width}×${height}`,
    );
  }
  const factor = settings.patchSize * settings.mergeSize;
  let h = roundHalfEven(height / factor) * factor;
  let w = roundHalfEven(width / factor) * factor;
  if (h * w > settings.maxPixels) {
    const beta = Math.sqrt((height * width) / settings.maxPixels);
    h = Math.max(factor, Math.floor(height / beta / factor) * factor);
    w = Math.max(factor, Math.floor(width / beta / factor) * factor);
  } else if (h * w < settings.minPixels) {
    const beta = Math.sqrt(settings.minPixels / (height * width));
    h = Math.ceil(height * beta / factor) * factor;
    w = Math.ceil(width * beta / factor) * factor;
  }
  const gridW = w / settings.patchSize;
  const gridH = h / settings.patchSize;
  return { width: w, height: h, gridW, gridH, tokens: (gridW * gridH) / settings.mergeSize ** 2 };
}

/** Python's `round`: to the nearest integer, halves to the even one. */
export function roundHalfEven(x: number): number {
  const floor = Math.floor(x);
  const diff = x - floor;
  if (diff < 0.5) return floor;
  if (diff > 0.5) return floor + 1;
  return floor % 2 === 0 ? floor : floor + 1;
}
