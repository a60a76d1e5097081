/**
 * An independent oracle for plain-text encoding: the Qwen3 tokenizer loaded again from a copy of
 * its files with the added tokens taken out, so no string in the text can become one.
 *
 * @module
 */
import { defaultTokenizerPath } from "../../lib/config/mod.ts";
import { type ChatTokenizer, loadTokenizer } from "../../lib/tokenizer/mod.ts";

let oracle: Promise<ChatTokenizer> | null = null;

/** Encodes text with no added token recognized (`<|im_end|>` as `<`, `|`, `im`, …). */
export function plainOracle(): Promise<ChatTokenizer> {
  oracle ??= (async () => {
    const source = defaultTokenizerPath();
    const dir = await Deno.makeTempDir({ prefix: "rg-plain-oracle-" });
    const tokenizer = JSON.parse(await Deno.readTextFile(`${source}/tokenizer.json`));
    const config = JSON.parse(await Deno.readTextFile(`${source}/tokenizer_config.json`));
    tokenizer.added_tokens = [];
    delete config.added_tokens_decoder;
    config.additional_special_tokens = [];
    // A loader needs an eos that is a single token: any plain vocabulary entry will do.
    config.eos_token = "!";
    await Deno.writeTextFile(`${dir}/tokenizer.json`, JSON.stringify(tokenizer));
    await Deno.writeTextFile(`${dir}/tokenizer_config.json`, JSON.stringify(config));
    try {
      return await loadTokenizer(dir);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  })();
  return oracle;
}

/** `<|im_start|>` and `<|im_end|>` of Qwen3. */
export const IM_START = 151644;
export const IM_END = 151645;

/**
 * The tokens Qwen3's template gives a user turn holding `text` and the assistant header after
 * it, with `text` encoded as plain text.
 */
export function plainUserTurn(plain: ChatTokenizer, text: string): number[] {
  return [
    IM_START,
    ...plain.encode(`user\n${text}`),
    IM_END,
    ...plain.encode("\n"),
    IM_START,
    ...plain.encode("assistant\n"),
  ];
}

/** `<tool_response>` and `</tool_response>` of Qwen3. */
export const TOOL_RESPONSE = 151665;
export const TOOL_RESPONSE_END = 151666;

/**
 * The delta Qwen3's template gives a tool result holding `text` after an assistant turn: the turn
 * separator, the user turn wrapping it, and the next assistant header, `text` as plain text.
 */
export function plainToolDelta(plain: ChatTokenizer, text: string): number[] {
  return [
    ...plain.encode("\n"),
    IM_START,
    ...plain.encode("user\n"),
    TOOL_RESPONSE,
    ...plain.encode(`\n${text}\n`),
    TOOL_RESPONSE_END,
    IM_END,
    ...plain.encode("\n"),
    IM_START,
    ...plain.encode("assistant\n"),
  ];
}
