import assert from "node:assert/strict";
import { ConfigError, resolveConfig } from "../../lib/config/mod.ts";
import { buildDeps } from "../../functions/_deps.ts";
import { qwen3 } from "../_gateway.ts";

Deno.test("buildDeps() refuses a CLAUDE_CODE_TARBALL that names no file, naming the variable", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const config = resolveConfig({
      KV_PATH: ":memory:",
      SGLANG_URL: "http://127.0.0.1:9",
      CLAUDE_CODE_TARBALL: "/nonexistent/claude-code.tgz",
    });
    await assert.rejects(
      buildDeps(config, { kv, tokenizer: await qwen3() }),
      (error) =>
        error instanceof ConfigError && error.variable === "CLAUDE_CODE_TARBALL" &&
        error.message === 'Invalid CLAUDE_CODE_TARBALL: no file at "/nonexistent/claude-code.tgz"',
    );
  } finally {
    kv.close();
  }
});
