import assert from "node:assert/strict";
import { defaultTokenizerPath } from "../../lib/config/mod.ts";
import { ModelFormatError } from "../../lib/output/mod.ts";
import { loadTokenizer, withFormats } from "../../lib/tokenizer/mod.ts";
import { familyTokenizer, templateFile } from "../_families.ts";
import { qwen3 } from "../_gateway.ts";

/** A folder holding the real `tokenizer.json` and a `tokenizer_config.json` edited by `edit`. */
async function editedTokenizerDir(
  edit: (config: Record<string, unknown>) => void,
): Promise<string> {
  const source = defaultTokenizerPath();
  const dir = await Deno.makeTempDir();
  await Deno.symlink(`${source}/tokenizer.json`, `${dir}/tokenizer.json`);
  const config = JSON.parse(await Deno.readTextFile(`${source}/tokenizer_config.json`));
  edit(config);
  await Deno.writeTextFile(`${dir}/tokenizer_config.json`, JSON.stringify(config));
  return dir;
}

Deno.test("loadTokenizer() reads the end-of-turn token and its single id", async () => {
  const tok = await qwen3();
  assert.equal(tok.eosToken, "<|im_end|>");
  assert.deepEqual(tok.encode("<|im_end|>"), [tok.eosId]);
  assert.equal(tok.decode([tok.eosId]), "<|im_end|>");
});

Deno.test("encode() turns special-token strings into their special tokens", async () => {
  const tok = await qwen3();
  const start = tok.encode("<|im_start|>");
  assert.equal(start.length, 1);
  assert.deepEqual(
    tok.encode("<|im_start|>user\nhi<|im_end|>"),
    [...start, ...tok.encode("user\nhi"), tok.eosId],
  );
  for (const tag of ["<think>", "</think>", "<tool_call>", "</tool_call>"]) {
    assert.equal(tok.encode(tag).length, 1, tag);
  }
});

Deno.test("decode() round-trips special tokens and multibyte text exactly", async () => {
  const tok = await qwen3();
  const texts = [
    "<|im_start|>user\nhéllo 世界 🎉<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n",
    "hello , world . isn 't",
    "  leading spaces\n\n\ttabs and trailing  ",
    "emoji family 👨‍👩‍👧‍👦 and flags 🇫🇷 and math 𝔸",
  ];
  for (const text of texts) assert.equal(tok.decode(tok.encode(text)), text);
});

Deno.test("decode() accepts a typed array and the empty input", async () => {
  const tok = await qwen3();
  const ids = tok.encode("ok 🎉");
  assert.equal(tok.decode(Uint32Array.from(ids)), "ok 🎉");
  assert.deepEqual(tok.encode(""), []);
  assert.equal(tok.decode([]), "");
});

Deno.test("loadTokenizer() reads model_max_length from tokenizer_config.json", async () => {
  const tok = await qwen3();
  assert.equal(tok.modelMaxLength, 131072);
  assert.equal(tok.path, defaultTokenizerPath());
});

Deno.test("loadTokenizer() treats a placeholder model_max_length as no limit", async () => {
  const dir = await editedTokenizerDir((config) => {
    config.model_max_length = 1e30;
  });
  try {
    const tok = await loadTokenizer(dir);
    assert.equal(tok.modelMaxLength, null);
    assert.deepEqual(tok.encode("hi 🎉"), (await qwen3()).encode("hi 🎉"));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("loadTokenizer() rejects a folder whose config has no chat_template, unless it is given one", async () => {
  const own = (await loadTokenizer(defaultTokenizerPath())).chatTemplate;
  const dir = await editedTokenizerDir((config) => {
    delete config.chat_template;
  });
  try {
    await assert.rejects(
      loadTokenizer(dir),
      new Error(
        `Cannot load tokenizer: "${dir}/tokenizer_config.json" has no chat_template (give one with CHAT_TEMPLATE)`,
      ),
    );
    const given = await loadTokenizer(dir, { chatTemplate: own });
    assert.equal(given.chatTemplate, own);
    assert.equal(
      given.render({ messages: [{ role: "user", content: "hi" }], tools: [] }, true),
      "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n",
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("loadTokenizer() on a missing folder names the missing file", async () => {
  const dir = "/nonexistent/rollout-gateway-tokenizer";
  await assert.rejects(
    loadTokenizer(dir),
    new Error(`Cannot load tokenizer: "${dir}/tokenizer.json" is missing`),
  );
});

Deno.test("loadTokenizer() on a folder without tokenizer_config.json names that file", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.symlink(`${defaultTokenizerPath()}/tokenizer.json`, `${dir}/tokenizer.json`);
    await assert.rejects(
      loadTokenizer(dir),
      new Error(`Cannot load tokenizer: "${dir}/tokenizer_config.json" is missing`),
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("render() ends with the assistant header only when asked", async () => {
  const tok = await qwen3();
  const prompt = { messages: [{ role: "user" as const, content: "hi" }], tools: [] };
  assert.equal(tok.render(prompt, true), "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");
  assert.equal(tok.render(prompt, false), "<|im_start|>user\nhi<|im_end|>\n");
});

Deno.test("render() closes thinking in the header when enableThinking is false", async () => {
  const tok = await qwen3();
  const prompt = {
    messages: [{ role: "user" as const, content: "hi" }],
    tools: [],
    enableThinking: false,
  };
  assert.equal(
    tok.render(prompt, true),
    "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n",
  );
});

Deno.test("render() lists the tools in the system turn", async () => {
  const tok = await qwen3();
  const tool = {
    type: "function" as const,
    function: { name: "Bash", description: "Run a command.", parameters: { type: "object" } },
  };
  const text = tok.render({
    messages: [{ role: "system", content: "Be brief." }, { role: "user", content: "hi" }],
    tools: [tool],
  }, true);
  assert.ok(text.startsWith("<|im_start|>system\nBe brief.\n\n# Tools\n"), text);
  assert.ok(
    text.includes(
      `<tools>\n${JSON.stringify(tool).replaceAll(",", ", ").replaceAll(":", ": ")}\n</tools>`,
    ),
    text,
  );
  assert.ok(
    !tok.render({ messages: [{ role: "user", content: "hi" }], tools: [] }, true).includes(
      "# Tools",
    ),
  );
});

Deno.test("loadTokenizer() takes each family's turn endings from its formats, and withFormats() refuses endings the vocabulary lacks", async () => {
  const qwen = await loadTokenizer(defaultTokenizerPath());
  assert.deepEqual(qwen.ending, {
    stopIds: [151645],
    closeId: 151645,
    closers: ["<|im_end|>"],
    openers: [],
  });
  // A harmony template over Qwen3's vocabulary loads (the configuration decides), with eos
  // endings; serving it as gpt-oss is refused, naming the parser.
  const template = await Deno.readTextFile(templateFile("gpt_oss"));
  const mixed = await loadTokenizer(defaultTokenizerPath(), { chatTemplate: template });
  assert.deepEqual(mixed.formats, { toolCallParser: "gpt-oss", reasoningParser: "gpt-oss" });
  assert.deepEqual(mixed.ending, qwen.ending);
  assert.throws(
    () => withFormats(mixed, mixed.formats),
    (error: unknown) =>
      error instanceof ModelFormatError && error.variable === "TOOL_CALL_PARSER" &&
      /^gpt-oss ends turns with "<\|return\|>", which is not a token of "/.test(error.message),
  );
  const gpt = await familyTokenizer("gpt_oss");
  assert.deepEqual(withFormats(gpt, { toolCallParser: "qwen25", reasoningParser: null }).ending, {
    stopIds: [gpt.eosId],
    closeId: gpt.eosId,
    closers: ["<|return|>"],
    openers: [],
  });
});
