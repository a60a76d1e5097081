/**
 * The scripted engine as a vision-language model: `/generate` takes `image_data`, and a prompt
 * whose `<|image_pad|>` tokens are not the images' count under the processor settings is refused,
 * as an engine refuses it; a text model refuses images.
 */
import assert from "node:assert/strict";
import { startScriptedEngine } from "../../lib/scripted_engine/mod.ts";
import { imageGrid, visionSettings } from "../../lib/vision/mod.ts";
import { qwen3 } from "../_gateway.ts";

const SETTINGS = visionSettings(JSON.stringify({
  patch_size: 16,
  merge_size: 2,
  size: { shortest_edge: 65_536, longest_edge: 16_777_216 },
}));

async function png(): Promise<string> {
  const bytes = await Deno.readFile(new URL("../../fixtures/images/plot.png", import.meta.url));
  return btoa(String.fromCharCode(...bytes));
}

Deno.test("a prompt with as many image pads as its images take is answered, the images recorded", async () => {
  const tokenizer = await qwen3();
  const [start, pad, end] = tokenizer.encode("<|vision_start|><|image_pad|><|vision_end|>");
  const engine = await startScriptedEngine({
    tokenizer,
    script: () => "A plot.",
    vision: { settings: SETTINGS, padId: pad },
  });
  try {
    const image = await png();
    // The 64 × 48 plot is resized up to the budget, 320 × 224: 20 × 14 patches, 70 tokens.
    const tokens = imageGrid(SETTINGS, 64, 48).tokens;
    assert.equal(tokens, 70);
    const prompt = (pads: number) => [
      ...tokenizer.encode("<|im_start|>user\n"),
      start,
      ...Array(pads).fill(pad),
      end,
      ...tokenizer.encode("What is this?<|im_end|>\n<|im_start|>assistant\n"),
    ];
    const ask = (pads: number, imageData: unknown) =>
      fetch(`${engine.url}/generate`, {
        method: "POST",
        body: JSON.stringify({
          input_ids: prompt(pads),
          image_data: imageData,
          sampling_params: { max_new_tokens: 8 },
        }),
      });
    const answered = await ask(tokens, [`data:image/png;base64,${image}`]);
    assert.equal(answered.status, 200);
    assert.equal((await answered.json()).text, "A plot.<|im_end|>");
    assert.deepEqual(engine.calls[0].images?.map((i) => [i.width, i.height, i.tokens]), [
      [320, 224, 70],
    ]);
    const short = await ask(tokens - 1, [image]);
    assert.equal(short.status, 400);
    assert.match(
      (await short.json()).error.message,
      /holds 69 image tokens; its 1 image\(s\) take 70/,
    );
    const none = await ask(tokens, undefined);
    assert.equal(none.status, 400);
    assert.match(
      (await none.json()).error.message,
      /holds 70 image tokens; its 0 image\(s\) take 0/,
    );
    const broken = await ask(tokens, [btoa("no image")]);
    assert.equal(broken.status, 400);
    assert.match((await broken.json()).error.message, /Failed to load image/);
  } finally {
    await engine.close();
  }
});

Deno.test("a text model refuses image_data", async () => {
  const tokenizer = await qwen3();
  const engine = await startScriptedEngine({ tokenizer, script: () => "ok" });
  try {
    const response = await fetch(`${engine.url}/generate`, {
      method: "POST",
      body: JSON.stringify({ input_ids: [1, 2], image_data: [await png()], sampling_params: {} }),
    });
    assert.equal(response.status, 400);
    assert.match((await response.json()).error.message, /takes no images/);
  } finally {
    await engine.close();
  }
});
