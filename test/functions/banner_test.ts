/**
 * The start-up banner says what the operator must know before the first rollout: every
 * registered agent CLI and whether it is ready here, which test runners a local sandbox can
 * grade with, what becomes of images, and the memory budget.
 */
import assert from "node:assert/strict";
import v8 from "node:v8";
import { memoryShares } from "../../lib/cache/mod.ts";
import { banner } from "../../functions/_banner.ts";
import { runnersHere } from "../../lib/evaluate/mod.ts";
import { AGENTS } from "../../lib/agents/mod.ts";
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
      `  agents:     ${AGENTS.map((harness) => `${harness.name} ready`).join(", ")}`,
    );
    assert.equal(AGENTS.length, 4);
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

Deno.test("the banner names the memory budget, what the caches may take of it, the heap limit in force and the flag that holds it to the budget", async () => {
  const gw = await startGateway({ env: { MEMORY_BUDGET_MB: "768" } });
  try {
    const shares = memoryShares(768);
    const mib = (bytes: number) => Math.round(bytes / 2 ** 20);
    const caches = Object.values(shares.caches).reduce((sum, bytes) => sum + bytes, 0) +
      gw.deps.config.tokenizerWorkers * shares.caches.sections;
    const limit = mib(v8.getHeapStatistics().heap_size_limit);
    // This test process runs with V8's default limit, above the budget's 384 MiB on any machine
    // of more than 2 GiB: the banner says which flag holds it to the budget.
    const hint = limit > 384 * 1.25
      ? " (DENO_V8_FLAGS=--max-old-space-size=384 holds it to the budget)"
      : "";
    const expected = `  memory:     budget 768 MiB (caches up to ${mib(caches)} MiB); ` +
      `V8 heap limit ${limit} MiB${hint}; freed memory given back every 30 s`;
    assert.equal(line(banner(gw.deps, gw.url), "memory"), expected);
    assert.ok(mib(caches) < 768 / 2);
  } finally {
    await gw.close();
  }
});
