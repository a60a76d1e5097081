/**
 * Images checked at the edge: each format read from its bytes (PNG, JPEG, WebP, GIF), its size
 * and identity; other formats, text that is no image, bad base64 and images past the bounds
 * refused with the problem a caller maps to 400 or 413.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { ImageRefusedError, probeImage } from "../../lib/vision/mod.ts";

const LIMITS = { maxBytes: 1 << 20, maxPixels: 1 << 24 };

async function fixture(name: string): Promise<{ bytes: Uint8Array; base64: string }> {
  const bytes = await Deno.readFile(new URL(`../../fixtures/images/${name}`, import.meta.url));
  return { bytes, base64: btoa(String.fromCharCode(...bytes)) };
}

/** The problem `probeImage` refuses `base64` with. */
function refusal(base64: string, limits = LIMITS): string {
  try {
    probeImage(base64, limits);
  } catch (error) {
    assert.ok(error instanceof ImageRefusedError, String(error));
    return error.problem;
  }
  return "accepted";
}

Deno.test("each format is read from its bytes: media type, pixel size, length, digest", async () => {
  const seen = [];
  for (const name of ["plot.png", "small.jpg", "small.webp", "small.gif"]) {
    const { bytes, base64 } = await fixture(name);
    const image = probeImage(base64, LIMITS);
    assert.equal(image.bytes, bytes.length);
    assert.equal(image.digest, createHash("sha256").update(bytes).digest("hex"));
    assert.equal(image.base64, base64);
    seen.push([name, image.mediaType, image.width, image.height]);
  }
  assert.deepEqual(seen, [
    ["plot.png", "image/png", 64, 48],
    ["small.jpg", "image/jpeg", 7, 5],
    ["small.webp", "image/webp", 7, 5],
    ["small.gif", "image/gif", 1, 1],
  ]);
});

Deno.test("other formats, no image, bad base64 and images past the bounds are refused by problem", async () => {
  const png = (await fixture("plot.png")).base64;
  assert.deepEqual(
    [
      refusal((await fixture("small.bmp")).base64),
      refusal(btoa("just some text, not an image at all")),
      refusal("not base64!"),
      refusal(png.slice(0, -1)),
      refusal(png, { maxBytes: 1000, maxPixels: LIMITS.maxPixels }),
      refusal(png, { maxBytes: LIMITS.maxBytes, maxPixels: 64 * 48 - 1 }),
      refusal(png, { maxBytes: LIMITS.maxBytes, maxPixels: 64 * 48 }),
    ],
    ["format", "not_an_image", "not_base64", "not_base64", "too_large", "pixels", "accepted"],
  );
  // Past the byte bound it is refused before it is decoded: an image of any size costs the same.
  const huge = "A".repeat(8 * 1024 * 1024);
  assert.equal(refusal(huge), "too_large");
});
