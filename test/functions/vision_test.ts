/**
 * A vision-language model served through HTTP (`IMAGE_POLICY=vision`): Qwen3-VL's template
 * (fixtures/templates/qwen3_vl.jinja) over Qwen's tokenizer, which has the vision tokens, and
 * Qwen3-VL's `preprocessor_config.json` in the model folder. Images from the Messages API (a
 * user's, and one inside a tool result, as Claude Code's Read of a PNG sends it), from OpenAI
 * `image_url` data URLs and from Responses `input_image` reach the engine as `image_data`, with
 * the one pad the template renders expanded to the image's tokens by the smart-resize formula;
 * a later turn sends every image of its prompt again and extends the chain exactly. Images past
 * the bounds, or not images, are 400s and 413s naming the field, with nothing recorded.
 */
import assert from "node:assert/strict";
import type OpenAI from "openai";
import { Buffer } from "node:buffer";
import { startsWith } from "../_chain_exact.ts";
import { ADMIN_HEADERS, type SampleJson, type TestGateway } from "../_gateway.ts";
import {
  fixtureImage as image,
  grayPng,
  IMAGES,
  padRuns,
  runStarts,
  visionGateway,
} from "../_vision.ts";

/** Entries in the gateway's KV: a refused request adds none. */
async function kvEntries(gw: TestGateway): Promise<number> {
  let count = 0;
  for await (const _ of gw.deps.kv.list({ prefix: [] })) count++;
  return count;
}

const READ_CALL =
  '<tool_call>\n{"name": "Read", "arguments": {"file_path": "plot.png"}}\n</tool_call>';

Deno.test("a user's image and Claude Code's Read of a PNG reach the engine with their pads, and the chain stays exact", async () => {
  const webp = await image("small.webp");
  const png = await image("plot.png");
  const jpg = await image("small.jpg");
  const { gw, padId, close } = await visionGateway([
    READ_CALL,
    "The tool gave an image.\n</think>\n\nIt is a plot of two lines.",
    "Another picture.\n</think>\n\nA dot.",
  ]);
  try {
    const { id, token } = await gw.openSession();
    const client = gw.anthropic(token);
    const tools = [{
      name: "Read",
      description: "Read a file.",
      input_schema: { type: "object" as const, properties: { file_path: { type: "string" } } },
    }];
    const first = await client.messages.create({
      model: "qwen3-vl",
      max_tokens: 64,
      tools,
      messages: [{
        role: "user",
        content: [
          {
            type: "image",
            source: { type: "base64", media_type: "image/webp", data: webp.base64 },
          },
          { type: "text", text: "What is in plot.png?" },
        ],
      }],
    });
    const call = first.content.find((block) => block.type === "tool_use");
    assert.ok(call && call.type === "tool_use", JSON.stringify(first.content));
    const history = (image: { base64: string }, media: "image/webp" | "image/jpeg") => [{
      role: "user" as const,
      content: [
        {
          type: "image" as const,
          source: { type: "base64" as const, media_type: media, data: image.base64 },
        },
        { type: "text" as const, text: "What is in plot.png?" },
      ],
    }];
    const after = (image: { base64: string }, media: "image/webp" | "image/jpeg") => [
      ...history(image, media),
      { role: "assistant" as const, content: first.content },
    ];
    const second = await client.messages.create({
      model: "qwen3-vl",
      max_tokens: 64,
      tools,
      messages: [
        ...after(webp, "image/webp"),
        {
          role: "user",
          content: [{
            type: "tool_result",
            tool_use_id: call.id,
            content: [{
              type: "image",
              source: { type: "base64", media_type: "image/png", data: png.base64 },
            }],
          }],
        },
      ],
    });
    assert.deepEqual(second.content.filter((block) => block.type === "text"), [
      { type: "text", text: "It is a plot of two lines." },
    ]);

    const calls = gw.engine.calls;
    assert.equal(calls.length, 2);
    // Each image's pads are as many as its smart-resized grid gives: whole arrays.
    assert.deepEqual(padRuns(calls[0].inputIds, padId), [webp.tokens]);
    assert.deepEqual(padRuns(calls[1].inputIds, padId), [webp.tokens, png.tokens]);
    assert.deepEqual(calls[0].images?.map((i) => i.digest), [webp.digest]);
    assert.deepEqual(calls[1].images?.map((i) => i.digest), [webp.digest, png.digest]);
    // The second prompt extends the first prompt and its sampled output (T1 with images).
    assert.ok(startsWith(calls[1].inputIds, calls[0].inputIds));
    const text = gw.tokenizer.decode(calls[1].inputIds);
    assert.ok(
      text.includes(
        `<tool_response>\n<|vision_start|>${
          "<|image_pad|>".repeat(png.tokens)
        }<|vision_end|>\n</tool_response>`,
      ),
      text,
    );

    // Every export names the images with their spans in the sample's tokens, and the trainer
    // fetches their bytes from the gateway.
    const starts = runStarts(calls[1].inputIds, padId);
    const expected = [
      { ...webp.meta, media_type: "image/webp", start: starts[0], length: webp.tokens },
      { ...png.meta, media_type: "image/png", start: starts[1], length: png.tokens },
    ].map((image) => ({ ...image, url: `/sessions/${id}/images/${image.digest}` }));
    const [sample] = await gw.samples(id) as (SampleJson & { images: unknown })[];
    assert.deepEqual(sample.images, expected);
    const tokens = [...sample.prompt_ids, ...sample.response_ids];
    for (const image of expected) {
      assert.deepEqual(
        tokens.slice(image.start - 1, image.start + image.length + 1),
        [
          gw.tokenizer.encode("<|vision_start|>")[0],
          ...Array(image.length).fill(padId),
          gw.tokenizer.encode("<|vision_end|>")[0],
        ],
      );
    }
    const exported = async (format: string) => {
      const response = await gw.fetch(`/sessions/${id}/samples?format=${format}`, {
        headers: ADMIN_HEADERS,
      });
      assert.equal(response.status, 200);
      const body = await response.json();
      return (body.samples ?? body.records)[0];
    };
    assert.deepEqual((await exported("slime")).multimodal_inputs, { images: expected });
    assert.deepEqual((await exported("verl")).multi_modal_data, { image: expected });
    assert.deepEqual((await exported("xtuner")).images, expected);
    const jsonl = await gw.fetch(`/sessions/${id}/samples?format=jsonl`, {
      headers: ADMIN_HEADERS,
    });
    assert.deepEqual(JSON.parse((await jsonl.text()).split("\n")[0]).images, expected);
    const fetched = await gw.fetch(expected[1].url, { headers: ADMIN_HEADERS });
    assert.equal(fetched.status, 200);
    assert.equal(fetched.headers.get("content-type"), "image/png");
    assert.deepEqual(new Uint8Array(await fetched.arrayBuffer()), png.bytes);
    const missing = await gw.fetch(`/sessions/${id}/images/${"0".repeat(64)}`, {
      headers: ADMIN_HEADERS,
    });
    assert.equal(missing.status, 404);
    await missing.body?.cancel();

    // A changed image is an edit: the same history with another first image does not extend
    // the chain, and its prompt holds the new image's pads.
    await client.messages.create({
      model: "qwen3-vl",
      max_tokens: 64,
      tools,
      messages: [...after(jpg, "image/jpeg"), { role: "user", content: "Another one?" }],
    });
    assert.equal(calls.length, 3);
    assert.deepEqual(padRuns(calls[2].inputIds, padId), [jpg.tokens]);
    assert.deepEqual(calls[2].images?.map((i) => i.digest), [jpg.digest]);
    assert.ok(!startsWith(calls[2].inputIds, calls[0].inputIds));
  } finally {
    await close();
  }
});

Deno.test("OpenAI image_url data URLs and Responses input_image reach the engine; a remote URL is a 400 naming the part", async () => {
  const jpg = await image("small.jpg");
  const { gw, padId, close } = await visionGateway([
    "Small.\n</think>\n\nA dot.",
    "Still small.\n</think>\n\nStill a dot.",
    "A dot again.",
  ]);
  try {
    const { id, token } = await gw.openSession();
    const openai = gw.openai(token);
    const dataUrl = `data:image/jpeg;base64,${jpg.base64}`;
    const asked: OpenAI.Chat.ChatCompletionMessageParam[] = [{
      role: "user",
      content: [{ type: "text", text: "What is this?" }, {
        type: "image_url",
        image_url: { url: dataUrl },
      }],
    }];
    const first = await openai.chat.completions.create({ model: "qwen3-vl", messages: asked });
    assert.equal(first.choices[0].message.content, "A dot.");
    assert.deepEqual(padRuns(gw.engine.calls[0].inputIds, padId), [jpg.tokens]);
    assert.deepEqual(gw.engine.calls[0].images?.map((i) => i.digest), [jpg.digest]);
    // The SDK's echo extends the chain; the image goes to the engine again.
    await openai.chat.completions.create({
      model: "qwen3-vl",
      messages: [...asked, first.choices[0].message, { role: "user", content: "Sure?" }],
    });
    const [call0, call1] = gw.engine.calls;
    assert.ok(startsWith(call1.inputIds, [...call0.inputIds, ...call0.output!]));
    assert.deepEqual(padRuns(call1.inputIds, padId), [jpg.tokens]);
    assert.deepEqual(call1.images?.map((i) => i.digest), [jpg.digest]);
    const [sample] = await gw.samples(id) as (SampleJson & { images: unknown[] })[];
    assert.deepEqual(sample.images, [{
      ...jpg.meta,
      media_type: "image/jpeg",
      start: runStarts(call0.inputIds, padId)[0],
      length: jpg.tokens,
      url: `/sessions/${id}/images/${jpg.digest}`,
    }]);

    const second = await gw.openSession();
    await gw.openai(second.token).responses.create({
      model: "qwen3-vl",
      input: [{
        role: "user",
        content: [{ type: "input_text", text: "And this?" }, {
          type: "input_image",
          image_url: dataUrl,
          detail: "auto",
        }],
      }],
    });
    assert.deepEqual(padRuns(gw.engine.calls[2].inputIds, padId), [jpg.tokens]);

    const before = await kvEntries(gw);
    const remote = await gw.fetch("/v1/chat/completions", {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({
        model: "qwen3-vl",
        messages: [{
          role: "user",
          content: [{ type: "image_url", image_url: { url: "https://example.com/a.png" } }],
        }],
      }),
    });
    assert.equal(remote.status, 400);
    const body = await remote.json();
    assert.match(body.error.message, /^messages\.0\.content\.0: an image_url at a remote URL/);
    assert.equal(await kvEntries(gw), before);
  } finally {
    await close();
  }
});

Deno.test("images past the bounds or not images are 413s and 400s naming the field, with nothing recorded", async () => {
  const png = await image("plot.png");
  const bmp = Buffer.from(await Deno.readFile(new URL("small.bmp", IMAGES))).toString("base64");
  const { gw, close } = await visionGateway([], {
    MAX_IMAGE_BYTES: "4096",
    MAX_IMAGES_PER_REQUEST: "2",
    MAX_IMAGE_PIXELS: "1000000",
  });
  try {
    const { token } = await gw.openSession();
    const send = (content: unknown[]) =>
      gw.fetch("/v1/messages", {
        method: "POST",
        headers: {
          "x-api-key": token,
          "anthropic-version": "2023-06-01",
          "content-type": "application/json",
        },
        body: JSON.stringify({
          model: "qwen3-vl",
          max_tokens: 16,
          messages: [{ role: "user", content }],
        }),
      });
    const imageBlock = (data: string, media = "image/png") => ({
      type: "image",
      source: { type: "base64", media_type: media, data },
    });
    const before = await kvEntries(gw);
    const cases: [unknown[], number, RegExp][] = [
      [
        [imageBlock(png.base64)],
        413,
        /^messages\.0\.content\.0\.source\.data: an image is larger than 4096 bytes/,
      ],
      [
        [imageBlock("not base64!")],
        400,
        /^messages\.0\.content\.0\.source\.data: an image's data is not base64/,
      ],
      [
        [imageBlock(bmp, "image/bmp")],
        400,
        /^messages\.0\.content\.0\.source\.data: an image is bmp/,
      ],
      [
        [imageBlock(Buffer.from("plain text, no image").toString("base64"))],
        400,
        /not an image|no image/,
      ],
      [
        [{ type: "image", source: { type: "url", url: "https://example.com/a.png" } }],
        400,
        /^messages\.0\.content\.0\.source: an image at a URL is not fetched/,
      ],
      [
        [imageBlock("R0lG"), imageBlock("R0lG"), imageBlock("R0lG")],
        413,
        /^messages: a request may hold at most 2 images, not 3/,
      ],
    ];
    for (const [content, status, message] of cases) {
      const response = await send(content);
      const body = await response.json();
      assert.equal(response.status, status, JSON.stringify(body));
      assert.match(body.error.message, message);
    }
    assert.equal(gw.engine.calls.length, 0);
    assert.equal(await kvEntries(gw), before);
  } finally {
    await close();
  }
});

Deno.test("each image's pads are as many as Python's smart_resize gives its size, from one pixel to past the budget", async () => {
  // [width, height, tokens]: tokens from Hugging Face's `smart_resize` in Python (factor 32,
  // Qwen3-VL's budget 65,536–16,777,216 pixels), one per 2×2 of 16-pixel patches. 80×2000 and
  // 48×16 have sides at a half (round-half-even), 1×1 grows to the budget's floor, 4200×4200
  // shrinks to its ceiling.
  const sizes: [number, number, number][] = [
    [1, 1, 64],
    [80, 2000, 124],
    [333, 777, 240],
    [1920, 1080, 2040],
    [48, 16, 70],
    [4200, 4200, 16384],
  ];
  const { gw, padId, close } = await visionGateway(["Six images."]);
  try {
    const { token } = await gw.openSession();
    await gw.anthropic(token).messages.create({
      model: "qwen3-vl",
      max_tokens: 16,
      messages: [{
        role: "user",
        content: [
          { type: "text", text: "What are these?" },
          ...sizes.map(([width, height]) => ({
            type: "image" as const,
            source: {
              type: "base64" as const,
              media_type: "image/png" as const,
              data: Buffer.from(grayPng(width, height)).toString("base64"),
            },
          })),
        ],
      }],
    });
    const [call] = gw.engine.calls;
    assert.deepEqual(padRuns(call.inputIds, padId), sizes.map(([, , tokens]) => tokens));
    assert.deepEqual(
      call.images?.map((image) => image.tokens),
      sizes.map(([, , tokens]) => tokens),
    );
  } finally {
    await close();
  }
});

Deno.test("a process that has not seen a history's image finds it in the request, though its bound is lower now", async () => {
  const png = await image("plot.png");
  const kv = await Deno.openKv(":memory:");
  const first = await visionGateway(["A plot."], {}, kv);
  // Another process on the same KV, started after MAX_IMAGE_BYTES was lowered below the image.
  const second = await visionGateway(["Still a plot."], { MAX_IMAGE_BYTES: "4096" }, kv);
  try {
    const { token } = await first.gw.openSession();
    const asked = [{
      role: "user" as const,
      content: [
        {
          type: "image" as const,
          source: { type: "base64" as const, media_type: "image/png" as const, data: png.base64 },
        },
        { type: "text" as const, text: "What is this?" },
      ],
    }];
    const reply = await first.gw.anthropic(token).messages.create({
      model: "qwen3-vl",
      max_tokens: 16,
      messages: asked,
    });
    await second.gw.anthropic(token).messages.create({
      model: "qwen3-vl",
      max_tokens: 16,
      messages: [...asked, { role: "assistant", content: reply.content }, {
        role: "user",
        content: "Sure?",
      }],
    });
    const [call0] = first.gw.engine.calls;
    const [call1] = second.gw.engine.calls;
    assert.ok(startsWith(call1.inputIds, [...call0.inputIds, ...call0.output!]));
    assert.deepEqual(call1.images?.map((i) => i.digest), [png.digest]);
    assert.deepEqual(padRuns(call1.inputIds, second.padId), [png.tokens]);
  } finally {
    await second.close();
    await first.close();
    kv.close();
  }
});
