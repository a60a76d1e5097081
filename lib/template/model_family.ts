/**
 * Which output formats the served model speaks, by SGLang's parser names (`--tool-call-parser`,
 * `--reasoning-parser`): chosen by configuration (`TOOL_CALL_PARSER`, `REASONING_PARSER`) or
 * detected from the chat template's text, and checked against the formats this gateway can
 * parse, so a model it cannot read is refused at start-up instead of mis-parsed on every turn.
 *
 * @module
 */

/**
 * The tool-call formats this gateway parses: hermes JSON (`<tool_call>\n{json}\n</tool_call>`),
 * Qwen3-Coder's XML (`<tool_call>\n<function=…>\n<parameter=…>`), DeepSeek-V3.1's sections of
 * calls (`<｜tool▁calls▁begin｜>…`), gpt-oss's harmony messages (`to=functions.NAME`), GLM's
 * `<arg_key>`/`<arg_value>` calls (`glm` and `glm45` with newlines, `glm47` without) and Kimi
 * K2's sections of `functions.NAME:IDX` calls.
 */
export const TOOL_CALL_PARSERS: ReadonlySet<string> = new Set([
  "qwen25",
  "qwen",
  "qwen3_coder",
  "deepseekv31",
  "gpt-oss",
  "glm",
  "glm45",
  "glm47",
  "kimi_k2",
]);

/**
 * The reasoning formats this gateway parses: `<think>` … `</think>` (the names SGLang maps to
 * its Qwen3 reasoning detector, and GLM's and Kimi K2's, which a tool call also ends) and
 * harmony's analysis channel (`gpt-oss`).
 */
export const REASONING_PARSERS: ReadonlySet<string> = new Set([
  "gpt-oss",
  "glm45",
  "kimi_k2",
  "qwen3",
  "qwen3-thinking",
  "deepseek-v3",
  "mimo",
  "minimax",
  "interns1",
]);

/**
 * SGLang's other tool-call parser names (`function_call_parser.py`): known, not parsed here yet.
 */
const OTHER_TOOL_CALL_PARSERS: ReadonlySet<string> = new Set([
  "deepseekv3",
  "deepseekv32",
  "lfm2",
  "llama3",
  "mimo",
  "mistral",
  "pythonic",
  "step3",
  "step3p5",
  "minimax-m2",
  "trinity",
  "interns1",
  "hermes",
  "hunyuan",
  "gigachat3",
  "gemma4",
]);

/** SGLang's other reasoning parser names (`reasoning_parser.py`): known, not parsed here yet. */
const OTHER_REASONING_PARSERS: ReadonlySet<string> = new Set([
  "deepseek-r1",
  "hunyuan",
  "kimi",
  "minimax-append-think",
  "step3",
  "step3p5",
  "mistral",
  "nemotron_3",
  "gemma4",
]);

/** The parsers of the served model, by SGLang's names; `null` reasoning: it does not think. */
export interface ModelFormats {
  readonly toolCallParser: string;
  readonly reasoningParser: string | null;
}

/**
 * How a format's turns end, as token texts:
 * - `stops`: what the model samples to end its turn (the engine stops on each);
 * - `close`: the token that closes an output that ended otherwise, cut by `max_tokens` or a stop
 *   string (T5); `false` when nothing does, because the next message's role marker follows;
 * - `closers`: what ends an assistant turn as the template renders it: a delta starts after one;
 * - `openers`: for families without a closer, the role markers that start the next message: a
 *   delta starts at one. When the model sampled that marker as its stop token, the chain already
 *   holds it and the delta's copy is dropped.
 *
 * `null` is the tokenizer's `eos_token`, which ends every turn of most families.
 */
export interface TurnEndTexts {
  readonly stops: readonly string[] | null;
  readonly close: string | null | false;
  readonly closers: readonly string[] | null;
  readonly openers: readonly string[];
}

/**
 * Harmony (gpt-oss) ends a turn with `<|call|>` after a tool call and `<|return|>` after a final
 * answer; both are stop tokens. A message inside a turn ends with `<|end|>`, which is also what
 * the template writes after an earlier final answer, so it closes a cut output.
 */
const HARMONY_ENDS: TurnEndTexts = {
  stops: ["<|return|>", "<|call|>"],
  close: "<|end|>",
  closers: ["<|end|>", "<|call|>"],
  openers: [],
};

/**
 * GLM has no end-of-turn token: the model stops by sampling the next message's role marker,
 * `<|observation|>` before tool results or `<|user|>` (or `<|endoftext|>`), and the template
 * renders the next message right after the assistant's text, starting with that marker.
 */
const GLM_ENDS: TurnEndTexts = {
  stops: ["<|endoftext|>", "<|user|>", "<|observation|>"],
  close: false,
  closers: [],
  openers: ["<|user|>", "<|observation|>", "<|system|>", "<|assistant|>"],
};

/**
 * Kimi K2 ends every message with `<|im_end|>` and nothing between messages; its tokenizer's
 * `eos_token` is `[EOS]`, which the chat never samples.
 */
const KIMI_ENDS: TurnEndTexts = {
  stops: ["<|im_end|>"],
  close: "<|im_end|>",
  closers: ["<|im_end|>"],
  openers: [],
};

const EOS_ENDS: TurnEndTexts = { stops: null, close: null, closers: null, openers: [] };

/** How turns end in `formats`' family. */
export function turnEndTexts(formats: ModelFormats): TurnEndTexts {
  switch (formats.toolCallParser) {
    case "gpt-oss":
      return HARMONY_ENDS;
    case "glm":
    case "glm45":
    case "glm47":
      return GLM_ENDS;
    case "kimi_k2":
      return KIMI_ENDS;
    default:
      return EOS_ENDS;
  }
}

/** The model's formats cannot be served: the message says what and what to do. */
export class ModelFormatError extends Error {
  constructor(readonly variable: "TOOL_CALL_PARSER" | "REASONING_PARSER", message: string) {
    super(message);
    this.name = "ModelFormatError";
  }
}

/**
 * The formats a chat template's text speaks, by the markers it renders: the tool-call format
 * (`null` when none is recognised) and whether it thinks in `<think>` blocks.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { detectFormats } from "./model_family.ts";
 * assert.deepEqual(
 *   detectFormats("…<tool_call>\n{{ tool_call | tojson }}\n</tool_call>…<think>…"),
 *   {
 *     toolCallParser: "qwen25",
 *     reasoningParser: "qwen3",
 *   },
 * );
 * ```
 */
export function detectFormats(
  template: string,
): { toolCallParser: string | null; reasoningParser: string | null } {
  const has = (marker: string) => template.includes(marker);
  let toolCallParser: string | null = null;
  if (has("<|channel|>")) toolCallParser = "gpt-oss";
  else if (has("tool▁calls▁begin")) {
    toolCallParser = has("function<｜tool▁sep｜>") ? "deepseekv3" : "deepseekv31";
  } else if (has("<|tool_calls_section_begin|>")) toolCallParser = "kimi_k2";
  else if (has("<arg_key>")) {
    // GLM-4.7 writes the name and the first key with nothing between them; 4.5 and 4.6 a newline.
    toolCallParser = has("{function-name}<arg_key>") ? "glm47" : "glm45";
  } else if (has("<function=") && has("<parameter=")) toolCallParser = "qwen3_coder";
  else if (has("<tool_call>")) toolCallParser = "qwen25";
  let reasoningParser: string | null = null;
  if (toolCallParser === "gpt-oss") reasoningParser = "gpt-oss";
  else if (toolCallParser?.startsWith("deepseek")) reasoningParser = "deepseek-v3";
  else if (toolCallParser === "kimi_k2" && has("<think>")) reasoningParser = "kimi_k2";
  else if (toolCallParser?.startsWith("glm") && has("<think>")) reasoningParser = "glm45";
  else if (has("<think>")) reasoningParser = "qwen3";
  return { toolCallParser, reasoningParser };
}

/**
 * The formats to serve: the configured parsers, else the detected ones; checked against what
 * this gateway parses.
 *
 * @throws {ModelFormatError} naming the variable: a parser name SGLang does not have, one this
 * gateway does not parse yet, or a template whose tool-call format is not recognised.
 */
export function resolveFormats(
  template: string,
  configured: { toolCallParser: string | null; reasoningParser: string | null },
): ModelFormats {
  const detected = detectFormats(template);
  const toolCallParser = configured.toolCallParser ?? detected.toolCallParser;
  if (toolCallParser === null) {
    throw new ModelFormatError(
      "TOOL_CALL_PARSER",
      `The chat template renders no tool-call format this gateway recognises: set TOOL_CALL_PARSER (one of ${
        [...TOOL_CALL_PARSERS].join(", ")
      })`,
    );
  }
  check(
    "TOOL_CALL_PARSER",
    toolCallParser,
    TOOL_CALL_PARSERS,
    OTHER_TOOL_CALL_PARSERS,
    configured.toolCallParser === null,
  );
  const reasoningParser = configured.reasoningParser === "none"
    ? null
    : configured.reasoningParser ?? detected.reasoningParser;
  if (reasoningParser !== null) {
    check(
      "REASONING_PARSER",
      reasoningParser,
      REASONING_PARSERS,
      OTHER_REASONING_PARSERS,
      configured.reasoningParser === null,
    );
  }
  if (
    (toolCallParser === "gpt-oss") !== (reasoningParser === "gpt-oss") && reasoningParser !== null
  ) {
    throw new ModelFormatError(
      "REASONING_PARSER",
      `REASONING_PARSER=${reasoningParser} does not go with TOOL_CALL_PARSER=${toolCallParser}: harmony's channels (gpt-oss) are read by both or by neither`,
    );
  }
  return { toolCallParser, reasoningParser };
}

function check(
  variable: "TOOL_CALL_PARSER" | "REASONING_PARSER",
  name: string,
  served: ReadonlySet<string>,
  others: ReadonlySet<string>,
  detected: boolean,
): void {
  if (served.has(name)) return;
  const supported = `supported: ${[...served].join(", ")}`;
  if (others.has(name)) {
    throw new ModelFormatError(
      variable,
      `${
        detected ? `The chat template speaks ${name} (detected)` : `${variable}=${name}`
      }: this gateway does not parse ${name} output yet (${supported})`,
    );
  }
  throw new ModelFormatError(
    variable,
    `${variable}=${name} is not a parser SGLang names (${supported})`,
  );
}
