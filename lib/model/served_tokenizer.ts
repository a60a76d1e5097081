/**
 * The served model's tokenizer as every request uses it, loaded and checked at start-up: its
 * output formats resolved (as configured or detected from the template), the configured special
 * tokens' policy applied, and its chat template rendered once as requests render it, so a model
 * whose output the gateway cannot read, or a template that cannot be cut into deltas, stops the
 * gateway before its first request, naming the variable to fix.
 *
 * @module
 */
import { memoryShares } from "../cache/mod.ts";
import type { Config } from "../config/mod.ts";
import { ConfigError } from "../errors/mod.ts";
import { ModelFormatError, resolveFormats } from "../output/mod.ts";
import { checkTemplate, TemplateError } from "../template/mod.ts";
import {
  type ChatTokenizer,
  loadTokenizer,
  withFormats,
  withTextTokens,
} from "../tokenizer/mod.ts";

/** What loading the served tokenizer reads of the configuration. */
export type TokenizerConfig = Pick<
  Config,
  | "tokenizerPath"
  | "chatTemplatePath"
  | "memoryBudgetMb"
  | "specialTokensInText"
  | "toolCallParser"
  | "reasoningParser"
>;

/**
 * The served model's tokenizer (`given`, or loaded from `TOKENIZER_PATH`), with its formats
 * resolved and its template checked.
 *
 * @throws {ConfigError} naming the variable to fix: `CHAT_TEMPLATE` unreadable or unservable,
 * `TOKENIZER_PATH`'s template unservable, `TOOL_CALL_PARSER`/`REASONING_PARSER` unknown.
 */
export async function loadServedTokenizer(
  config: TokenizerConfig,
  given?: ChatTokenizer,
): Promise<ChatTokenizer> {
  const loaded = withTextTokens(
    given ?? await loadTokenizer(config.tokenizerPath, {
      chatTemplate: await chatTemplateOverride(config.chatTemplatePath),
      sectionCacheBytes: memoryShares(config.memoryBudgetMb).caches.sections,
    }),
    config.specialTokensInText,
  );
  const tokenizer = servedTokenizer(loaded, config);
  checkServedTemplate(tokenizer, config);
  return tokenizer;
}

/** The text of `CHAT_TEMPLATE`, or `undefined` when it is unset. */
async function chatTemplateOverride(path: string | null): Promise<string | undefined> {
  if (path === null) return undefined;
  try {
    return await Deno.readTextFile(path);
  } catch (error) {
    throw new ConfigError(
      "CHAT_TEMPLATE",
      `Invalid CHAT_TEMPLATE: cannot read "${path}" (${(error as Error).message})`,
    );
  }
}

/**
 * Renders what requests render, so a template that cannot be cut into deltas stops start-up,
 * naming where the template came from.
 */
function checkServedTemplate(tokenizer: ChatTokenizer, config: TokenizerConfig): void {
  try {
    checkTemplate(tokenizer);
  } catch (error) {
    if (!(error instanceof TemplateError)) throw error;
    const variable = config.chatTemplatePath === null ? "TOKENIZER_PATH" : "CHAT_TEMPLATE";
    throw new ConfigError(variable, `The chat template cannot be served: ${error.message}`);
  }
}

/** The tokenizer serving the model's formats, as configured or detected; refused at start-up. */
function servedTokenizer(tokenizer: ChatTokenizer, config: TokenizerConfig): ChatTokenizer {
  try {
    return withFormats(tokenizer, resolveFormats(tokenizer.chatTemplate, config));
  } catch (error) {
    if (error instanceof ModelFormatError) throw new ConfigError(error.variable, error.message);
    throw error;
  }
}
