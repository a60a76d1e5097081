/**
 * Image token counts as Qwen's vision processors give them: the grid of several image sizes
 * under Qwen3-VL's and Qwen2.5-VL's settings equals Hugging Face's Python `smart_resize` (values
 * computed with it: Python's `round`, halves to even), whole arrays; the settings are read from a
 * `preprocessor_config.json` of either shape.
 */
import assert from "node:assert/strict";
import { Qwen2VLImageProcessor } from "@huggingface/transformers";
import {
  imageGrid,
  roundHalfEven,
  VisionError,
  visionSettings,
} from "../../lib/vision/image_grid.ts";

/** Qwen3-VL's `preprocessor_config.json` (its pixel budget under `size`). */
const QWEN3_VL = JSON.stringify({
  image_processor_type: "Qwen2VLImageProcessorFast",
  patch_size: 16,
  temporal_patch_size: 2,
  merge_size: 2,
  size: { longest_edge: 16_777_216, shortest_edge: 65_536 },
});

/** Qwen2.5-VL's (`min_pixels`/`max_pixels`). */
const QWEN25_VL = JSON.stringify({
  image_processor_type: "Qwen2VLImageProcessor",
  patch_size: 14,
  temporal_patch_size: 2,
  merge_size: 2,
  min_pixels: 3136,
  max_pixels: 12_845_056,
});

const SIZES: [number, number][] = [
  [640, 480],
  [80, 2000], // 80 is 2.5 factors of 32: Python rounds it to 2
  [1920, 1080],
  [8000, 6000], // over the budget
  [2, 3], // under it
  [28, 28],
  [1000, 5], // an aspect ratio of exactly 200
  [3000, 200],
];

/** `[width, height, resized width, resized height, grid w, grid h, tokens]` of each size. */
function grids(text: string): number[][] {
  const settings = visionSettings(text);
  return SIZES.map(([w, h]) => {
    const grid = imageGrid(settings, w, h);
    return [w, h, grid.width, grid.height, grid.gridW, grid.gridH, grid.tokens];
  });
}

Deno.test("image token counts equal the Python smart_resize's under Qwen3-VL's settings", () => {
  assert.deepEqual(grids(QWEN3_VL), [
    [640, 480, 640, 480, 40, 30, 300],
    [80, 2000, 64, 1984, 4, 124, 124],
    [1920, 1080, 1920, 1088, 120, 68, 2040],
    [8000, 6000, 4704, 3520, 294, 220, 16170],
    [2, 3, 224, 320, 14, 20, 70],
    [28, 28, 256, 256, 16, 16, 64],
    [1000, 5, 3648, 32, 228, 2, 114],
    [3000, 200, 3008, 192, 188, 12, 564],
  ]);
});

Deno.test("image token counts equal the Python smart_resize's under Qwen2.5-VL's settings", () => {
  assert.deepEqual(grids(QWEN25_VL), [
    [640, 480, 644, 476, 46, 34, 391],
    [80, 2000, 84, 1988, 6, 142, 213],
    [1920, 1080, 1932, 1092, 138, 78, 2691],
    [8000, 6000, 4116, 3080, 294, 220, 16170],
    [2, 3, 56, 84, 4, 6, 6],
    [28, 28, 56, 56, 4, 4, 4],
    [1000, 5, 812, 28, 58, 2, 29],
    [3000, 200, 2996, 196, 214, 14, 749],
  ]);
});

Deno.test("the JavaScript library's smart_resize rounds halves up, so it is not used", () => {
  // Why the formula is kept in lib/vision: at 80 × 2000 the library resizes to 96 × 2016.
  const processor = new Qwen2VLImageProcessor(JSON.parse(QWEN3_VL));
  // It reads only the image's size.
  const image = { width: 80, height: 2000 } as Parameters<
    typeof processor.get_resize_output_image_size
  >[0];
  const [width, height] = processor.get_resize_output_image_size(image, {});
  assert.deepEqual([width, height], [96, 2016]);
  assert.deepEqual(
    imageGrid(visionSettings(QWEN3_VL), 80, 2000),
    { width: 64, height: 1984, gridW: 4, gridH: 124, tokens: 124 },
  );
  assert.deepEqual([0.5, 1.5, 2.5, 2.4, 2.6, 3].map(roundHalfEven), [0, 2, 2, 2, 3, 3]);
});

Deno.test("settings that are not a Qwen vision processor's, and images past the aspect ratio, are refused by name", () => {
  assert.throws(() => visionSettings("{"), /not JSON/);
  assert.throws(
    () => visionSettings(JSON.stringify({ patch_size: 16, merge_size: 2, size: {} })),
    /min_pixels must be a positive integer/,
  );
  assert.throws(
    () => visionSettings(JSON.stringify({ patch_size: 0, merge_size: 2 })),
    /patch_size must be a positive integer/,
  );
  assert.throws(
    () =>
      visionSettings(
        JSON.stringify({ patch_size: 14, merge_size: 2, min_pixels: 10, max_pixels: 5 }),
      ),
    /min_pixels is more than max_pixels/,
  );
  const settings = visionSettings(QWEN3_VL);
  assert.throws(() => imageGrid(settings, 1000, 4), VisionError);
  assert.throws(() => imageGrid(settings, 0, 10), /positive size/);
});
