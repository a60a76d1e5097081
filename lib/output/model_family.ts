/**
 * Which output formats the served model speaks, by SGLang's parser names (`--tool-call-parser`,
 * `--reasoning-parser`): chosen by configuration (`TOOL_CALL_PARSER`, `REASONING_PARSER`) or
 * detected from the chat template's text by the families in `families/`, and checked against the
 * formats this gateway can parse, so a model it cannot read is refused at start-up instead of
 * mis-parsed on every turn.
 *
 * @module
 */
import { type ModelFamily, type ModelFormats, thinksInTags, type TurnEndTexts } from "./family.ts";
import { FAMILIES, familyOf, QWEN } from "./families/mod.ts";

/** The tool-call formats this gateway parses: every name a family in `families/` is served under. */
export const TOOL_CALL_PARSERS: ReadonlySet<string> = new Set(
  FAMILIES.flatMap((family) => family.toolCallParsers),
);

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

/** The family serving `formats`: its tool-call parser's (Qwen's for a name none serves). */
export function modelFamily(formats: ModelFormats): ModelFamily {
  return familyOf(formats.toolCallParser) ?? QWEN;
}

/** How turns end in `formats`' family. */
export function turnEndTexts(formats: ModelFormats): TurnEndTexts {
  return modelFamily(formats).ends;
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
 * (`null` when none is recognised) and its reasoning, as the first of `families` (the served
 * ones unless given) that recognises it says.
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
  families: readonly ModelFamily[] = FAMILIES,
): { toolCallParser: string | null; reasoningParser: string | null } {
  const has = (marker: string) => template.includes(marker);
  const ordered = [
    ...families.filter((family) => !family.detectLast),
    ...families.filter((family) => family.detectLast),
  ];
  for (const family of ordered) {
    const toolCallParser = family.detect(has);
    if (toolCallParser !== null) {
      return { toolCallParser, reasoningParser: family.detectReasoning(has) };
    }
  }
  return { toolCallParser: null, reasoningParser: thinksInTags(has) };
}

/**
 * The formats to serve: the configured parsers, else the detected ones; checked against what
 * `families` (the served ones unless given) parse.
 *
 * @throws {ModelFormatError} naming the variable: a parser name SGLang does not have, one this
 * gateway does not parse yet, or a template whose tool-call format is not recognised.
 */
export function resolveFormats(
  template: string,
  configured: { toolCallParser: string | null; reasoningParser: string | null },
  families: readonly ModelFamily[] = FAMILIES,
): ModelFormats {
  const detected = detectFormats(template, families);
  const served = new Set(families.flatMap((family) => family.toolCallParsers));
  const toolCallParser = configured.toolCallParser ?? detected.toolCallParser;
  if (toolCallParser === null) {
    throw new ModelFormatError(
      "TOOL_CALL_PARSER",
      `The chat template renders no tool-call format this gateway recognises: set TOOL_CALL_PARSER (one of ${
        [...served].join(", ")
      })`,
    );
  }
  check(
    "TOOL_CALL_PARSER",
    toolCallParser,
    served,
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
  // A family whose one parser reads its reasoning too goes with that reasoning parser or none,
  // and that reasoning parser with no other family.
  const own = (families.find((family) => family.toolCallParsers.includes(toolCallParser)) ?? QWEN)
    .output.ownReasoning;
  const owned = families.flatMap((family) => family.output.ownReasoning ?? []);
  if (
    reasoningParser !== null &&
    (own !== undefined ? reasoningParser !== own : owned.includes(reasoningParser))
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
