/**
 * The served model's tokenizer and chat template, loaded from a local Hugging Face folder by
 * `@huggingface/transformers` with remote loading switched off.
 *
 * @module
 */
import { AutoTokenizer, env } from "@huggingface/transformers";
import type { ChatPrompt } from "../chat/mod.ts";

/** Encodes, decodes and renders chat prompts for one model. */
export interface ChatTokenizer {
  /** The folder the tokenizer was loaded from. */
  readonly path: string;
  /** The text of the end-of-turn token (`<|im_end|>` for Qwen3), which closes an assistant turn. */
  readonly eosToken: string;
  /** The id of {@linkcode ChatTokenizer.eosToken}. */
  readonly eosId: number;
  /** `model_max_length` from `tokenizer_config.json`, when it is a real limit. */
  readonly modelMaxLength: number | null;
  /** Token ids of `text`; special-token strings in it become their special tokens. */
  encode(text: string): number[];
  /** Text of `ids` with special tokens kept and no whitespace clean-up: exact where encode allows. */
  decode(ids: ArrayLike<number>): string;
  /** The chat template's text for `prompt`, ending with the assistant header when asked. */
  render(prompt: ChatPrompt, addGenerationPrompt: boolean): string;
}

/** `model_max_length` values at or above this are tokenizer placeholders for "no limit". */
const NO_LIMIT = 1e12;

/**
 * Loads the tokenizer in `path` (a folder with `tokenizer.json` and `tokenizer_config.json`).
 *
 * @example
 * ```ts
 * const tokenizer = await loadTokenizer(defaultTokenizerPath());
 * tokenizer.decode(tokenizer.encode("hi")); // "hi"
 * ```
 */
export async function loadTokenizer(path: string): Promise<ChatTokenizer> {
  for (const file of ["tokenizer.json", "tokenizer_config.json"]) {
    try {
      await Deno.stat(`${path}/${file}`);
    } catch {
      throw new Error(`Cannot load tokenizer: "${path}/${file}" is missing`);
    }
  }
  env.allowRemoteModels = false;
  env.allowLocalModels = true;
  const slash = path.replace(/\/+$/, "").lastIndexOf("/");
  env.localModelPath = slash >= 0 ? path.slice(0, slash + 1) : "./";
  const inner = await AutoTokenizer.from_pretrained(path.slice(slash + 1), {
    local_files_only: true,
  });
  const eosToken: string | undefined = inner.eos_token;
  if (!eosToken) throw new Error(`Cannot load tokenizer: "${path}" defines no eos_token`);
  const eosId = inner.encode(eosToken, { add_special_tokens: false });
  if (eosId.length !== 1) {
    throw new Error(`Cannot load tokenizer: eos_token "${eosToken}" is not a single token`);
  }
  const config = inner._tokenizerConfig as Record<string, unknown>;
  if (typeof config.chat_template !== "string" && !Array.isArray(config.chat_template)) {
    throw new Error(`Cannot load tokenizer: "${path}/tokenizer_config.json" has no chat_template`);
  }
  const maxLength = Number(config.model_max_length);
  return {
    path,
    eosToken,
    eosId: eosId[0],
    modelMaxLength: Number.isFinite(maxLength) && maxLength > 0 && maxLength < NO_LIMIT
      ? maxLength
      : null,
    encode: (text) => text.length === 0 ? [] : inner.encode(text, { add_special_tokens: false }),
    decode: (ids) =>
      ids.length === 0 ? "" : inner.decode(Array.from(ids), {
        skip_special_tokens: false,
        clean_up_tokenization_spaces: false,
      }),
    render: (prompt, addGenerationPrompt) =>
      inner.apply_chat_template(prompt.messages as never, {
        tools: prompt.tools.length > 0 ? prompt.tools as never : null,
        add_generation_prompt: addGenerationPrompt,
        tokenize: false,
        ...(prompt.enableThinking === undefined ? {} : { enable_thinking: prompt.enableThinking }),
      }) as string,
  };
}
