/**
 * The model families this gateway serves. A chat template is the first family's whose markers it
 * renders, those marked `detectLast` (Qwen's `<tool_call>`, which others render too) tested after
 * the rest. A new family is a file beside these and one line here.
 *
 * @module
 */
import type { ModelFamily } from "../family.ts";
import { DEEPSEEK } from "./deepseek.ts";
import { GLM } from "./glm.ts";
import { GPT_OSS } from "./gpt_oss.ts";
import { KIMI_K2 } from "./kimi_k2.ts";
import { QWEN } from "./qwen.ts";
import { QWEN3_CODER } from "./qwen3_coder.ts";

export { CHATML_ROLES } from "./qwen.ts";
export { DEEPSEEK, GLM, GPT_OSS, KIMI_K2, QWEN, QWEN3_CODER };

/** Every family served. */
export const FAMILIES: readonly ModelFamily[] = [
  QWEN,
  QWEN3_CODER,
  DEEPSEEK,
  GPT_OSS,
  GLM,
  KIMI_K2,
];

const BY_PARSER: ReadonlyMap<string, ModelFamily> = new Map(
  FAMILIES.flatMap((family) => family.toolCallParsers.map((name) => [name, family])),
);

/** The family served under tool-call parser `name`; `null` for one this gateway does not parse. */
export function familyOf(name: string): ModelFamily | null {
  return BY_PARSER.get(name) ?? null;
}
