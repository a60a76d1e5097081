/**
 * Test harness for vision-language models: Qwen3-VL's template over Qwen's tokenizer (which has
 * the vision tokens), Qwen3-VL's `preprocessor_config.json` in a model folder of its own, and a
 * gateway with `IMAGE_POLICY=vision` over the scripted engine as a vision model.
 */
import { createHash } from "node:crypto";
import { Buffer } from "node:buffer";
import { imageSize } from "image-size";
import { defaultTokenizerPath } from "../lib/config/mod.ts";
import type { Reply, Script } from "../lib/scripted_engine/mod.ts";
import { type ChatTokenizer, loadTokenizer } from "../lib/template/mod.ts";
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
