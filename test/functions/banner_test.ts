/**
 * The start-up banner says what the operator must know before the first rollout: every
 * registered agent CLI and whether it is ready here, which test runners a local sandbox can
 * grade with, and what becomes of images.
 */
import assert from "node:assert/strict";
import { banner } from "../../functions/_deps.ts";
import { runnersHere } from "../../lib/evaluate/mod.ts";
import { CLI_HARNESSES } from "../../lib/rollout/mod.ts";
import { startGateway } from "../_gateway.ts";
import { PREPROCESSOR, visionGateway } from "../_vision.ts";

/** The banner's line starting with `label`. */
function line(text: string, label: string): string {
  return text.split("\n").find((row) => row.trimStart().startsWith(`${label}:`)) ?? "";
}

Deno.test("the banner names every registered agent CLI, each ready here", async () => {
  const gw = await startGateway();
  try {
    const text = banner(gw.deps, gw.url);
    // The test machine has every CLI installed (tools/setup.ts --tests).
    assert.equal(
      line(text, "agents"),
      `  agents:     ${CLI_HARNESSES.map((harness) => `${harness.name} ready`).join(", ")}`,
    );
    assert.equal(CLI_HARNESSES.length, 4);
  } finally {
    await gw.close();
  }
});

Deno.test("the banner says which test runners a local sandbox has, and how to install a missing one", async () => {
  const gw = await startGateway();
  try {
    const missing = new Map([["unittest", true], ["pytest", false], ["node", true]] as const);
    assert.equal(
      line(banner(gw.deps, gw.url, undefined, missing), "runners"),
      "  runners:    unittest ready, pytest missing (apt-get install python3-pytest), node ready",
    );
    // This machine, as a local sandbox sees it (Debian's python3-pytest, node).
    assert.equal(
      line(banner(gw.deps, gw.url, undefined, await runnersHere()), "runners"),
      "  runners:    unittest ready, pytest ready, node ready",
    );
    assert.equal(line(banner(gw.deps, gw.url), "runners"), "  runners:    not checked");
  } finally {
    await gw.close();
  }
});

Deno.test("the banner says which image policy is in force, and how to turn vision on when the tokenizer folder has an image processor", async () => {
  const gw = await startGateway();
  const folder = await Deno.makeTempDir({ prefix: "rg-banner-vl-" });
  try {
    assert.equal(
      line(banner(gw.deps, gw.url), "images"),
      "  images:     placeholder (each image becomes a short text naming it)",
    );
    // A Qwen-VL folder served without IMAGE_POLICY=vision: images become placeholders, said so.
    await Deno.writeTextFile(`${folder}/preprocessor_config.json`, PREPROCESSOR);
    const blind = { ...gw.deps, imageProcessor: `${folder}/preprocessor_config.json` };
    assert.equal(
      line(banner(blind, gw.url), "images"),
      "  images:     placeholder (each image becomes a short text naming it); the tokenizer " +
        "folder has an image processor (preprocessor_config.json): IMAGE_POLICY=vision gives " +
        "images to the model",
    );
  } finally {
    await gw.close();
    await Deno.remove(folder, { recursive: true });
  }
});

Deno.test("a vision gateway's banner says images go to the model", async () => {
  const { gw, close } = await visionGateway([]);
  try {
    assert.equal(gw.deps.imageProcessor?.endsWith("/preprocessor_config.json"), true);
    assert.equal(
      line(banner(gw.deps, gw.url), "images"),
      "  images:     vision (images go to the model)",
    );
  } finally {
    await close();
  }
});
