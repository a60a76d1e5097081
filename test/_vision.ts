/**
 * Test harness for vision-language models: Qwen3-VL's template over Qwen's tokenizer (which has
 * the vision tokens), Qwen3-VL's `preprocessor_config.json` in a model folder of its own, and a
 * gateway with `IMAGE_POLICY=vision` over the scripted engine as a vision model.
 */
import type { Store } from "../lib/kv/mod.ts";
import { createHash } from "node:crypto";
import { Buffer } from "node:buffer";
import { imageSize } from "image-size";
import { deflateSync } from "node:zlib";
import { defaultTokenizerPath } from "../lib/config/mod.ts";
import type { Reply, Script } from "../lib/scripted_engine/mod.ts";
import { type ChatTokenizer, loadTokenizer } from "../lib/tokenizer/mod.ts";
import { imageGrid, visionSettings } from "../lib/vision/mod.ts";
import { startGateway, type TestGateway } from "./_gateway.ts";

export const TEMPLATE = new URL("../fixtures/templates/qwen3_vl.jinja", import.meta.url);
export const IMAGES = new URL("../fixtures/images/", import.meta.url);

/** Qwen3-VL's `preprocessor_config.json`, as the model folder ships it. */
export const PREPROCESSOR = JSON.stringify({
  image_processor_type: "Qwen2VLImageProcessorFast",
  patch_size: 16,
  temporal_patch_size: 2,
  merge_size: 2,
  size: { longest_edge: 16_777_216, shortest_edge: 65_536 },
  image_mean: [0.5, 0.5, 0.5],
  image_std: [0.5, 0.5, 0.5],
});
export const SETTINGS = visionSettings(PREPROCESSOR);

/** Qwen3-VL: Qwen's tokenizer with the template of fixtures/templates/qwen3_vl.jinja. */
let tokenizer: Promise<ChatTokenizer> | null = null;
export function qwen3Vl(): Promise<ChatTokenizer> {
  tokenizer ??= Deno.readTextFile(TEMPLATE).then((chatTemplate) =>
    loadTokenizer(defaultTokenizerPath(), { chatTemplate })
  );
  return tokenizer;
}

/** An image fixture: its base64, digest and the tokens Qwen3-VL gives its pixel size. */
export async function fixtureImage(name: string) {
  const bytes = await Deno.readFile(new URL(name, IMAGES));
  const { width, height } = imageSize(bytes);
  const digest = createHash("sha256").update(bytes).digest("hex");
  return {
    bytes,
    base64: Buffer.from(bytes).toString("base64"),
    digest,
    tokens: imageGrid(SETTINGS, width, height).tokens,
    /** What an export says of it besides its media type and span. */
    meta: { digest, width, height, bytes: bytes.length },
  };
}

/** A vision gateway: the model folder holds the processor's settings. */
export async function visionGateway(
  script: Script | Reply[],
  env: Record<string, string> = {},
  /** Share this KV (another gateway's), as processes share one KV file. */
  kv?: Store,
): Promise<{ gw: TestGateway; padId: number; close: () => Promise<void> }> {
  const tok = await qwen3Vl();
  const folder = await Deno.makeTempDir({ prefix: "rg-vl-" });
  await Deno.writeTextFile(`${folder}/preprocessor_config.json`, PREPROCESSOR);
  const padId = tok.encode("<|image_pad|>")[0];
  const gw = await startGateway({
    script,
    tokenizer: tok,
    vision: { settings: SETTINGS, padId },
    env: { IMAGE_POLICY: "vision", TOKENIZER_PATH: folder, ...env },
    ...(kv ? { kv } : {}),
  });
  return {
    gw,
    padId,
    close: async () => {
      await gw.close();
      await Deno.remove(folder, { recursive: true });
    },
  };
}

/** The lengths of the runs of `pad` in `ids`: each image's tokens, in order. */
export function padRuns(ids: readonly number[], pad: number): number[] {
  const runs: number[] = [];
  for (let i = 0; i < ids.length; i++) {
    if (ids[i] !== pad) continue;
    if (i > 0 && ids[i - 1] === pad) runs[runs.length - 1]++;
    else runs.push(1);
  }
  return runs;
}

/** Where each run of `pad` starts in `ids`. */
export function runStarts(ids: readonly number[], pad: number): number[] {
  return ids.flatMap((id, i) => (id === pad && ids[i - 1] !== pad ? [i] : []));
}

/** CRC-32 of `bytes` (PNG's chunk checksum). */
function crc32(bytes: Uint8Array): number {
  let crc = 0xffffffff;
  for (const byte of bytes) {
    crc ^= byte;
    for (let k = 0; k < 8; k++) crc = (crc >>> 1) ^ (0xedb88320 & -(crc & 1));
  }
  return (crc ^ 0xffffffff) >>> 0;
}

/** A black grayscale PNG of `width × height` pixels: images of any size for the tests. */
export function grayPng(width: number, height: number): Uint8Array {
  const chunk = (type: string, data: Uint8Array) => {
    const body = new Uint8Array(4 + data.length);
    body.set(new TextEncoder().encode(type));
    body.set(data, 4);
    const out = new Uint8Array(12 + data.length);
    const view = new DataView(out.buffer);
    view.setUint32(0, data.length);
    out.set(body, 4);
    view.setUint32(8 + data.length, crc32(body));
    return out;
  };
  const header = new Uint8Array(13);
  const view = new DataView(header.buffer);
  view.setUint32(0, width);
  view.setUint32(4, height);
  header.set([8, 0, 0, 0, 0], 8); // 8 bits, grayscale, deflate, no filter, no interlace
  // Each row: filter type 0 and its pixels, all 0.
  const pixels = deflateSync(new Uint8Array((width + 1) * height));
  const parts = [
    new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk("IHDR", header),
    chunk("IDAT", new Uint8Array(pixels)),
    chunk("IEND", new Uint8Array(0)),
  ];
  return new Uint8Array(Buffer.concat(parts));
}
