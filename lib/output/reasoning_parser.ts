/**
 * Splits a Qwen3-style output into reasoning and the rest (`<think>` … `</think>`), the way
 * SGLang's `qwen3`, `glm45` and `kimi_k2` reasoning parsers do.
 *
 * @module
 */

const THINK_START = "<think>";
const THINK_END = "</think>";
/** A tool call ends reasoning implicitly, as in SGLang's detectors (`tool_start_token`). */
const TOOL_START = "<tool_call>";

/** An output divided at the end of its reasoning. */
export interface ReasoningSplit {
  /** The reasoning text without its tags and surrounding newlines; `null` when there is none. */
  readonly reasoning: string | null;
  /** Everything after the reasoning. */
  readonly rest: string;
}

/**
 * Separates reasoning from the answer. Reasoning starts when the output opens with `<think>`
 * or when the prompt already opened it (`startsInReasoning`); without a closing tag the whole
 * output is reasoning (thinking cut short). `toolStart`, the marker that opens the format's tool
 * calls, ends reasoning too.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { splitReasoning } from "./reasoning_parser.ts";
 * assert.deepEqual(splitReasoning("<think>\nplan\n</think>\n\nanswer", false), {
 *   reasoning: "plan",
 *   rest: "answer",
 * });
 * ```
 */
export function splitReasoning(
  text: string,
  startsInReasoning: boolean,
  toolStart = TOOL_START,
): ReasoningSplit {
  const lead = text.length - text.trimStart().length;
  const opened = text.startsWith(THINK_START, lead);
  if (!opened && !startsInReasoning) return { reasoning: null, rest: text };
  const start = opened ? lead + THINK_START.length : 0;
  const close = text.indexOf(THINK_END, start);
  const tool = text.indexOf(toolStart, start);
  let end: number;
  let resume: number;
  if (close >= 0 && (tool < 0 || close < tool)) {
    end = close;
    resume = close + THINK_END.length;
  } else if (tool >= 0) {
    end = resume = tool;
  } else {
    end = resume = text.length;
  }
  return {
    reasoning: text.slice(start, end).replace(/^\n+|\n+$/g, ""),
    rest: text.slice(resume).replace(/^\n+/, ""),
  };
}
