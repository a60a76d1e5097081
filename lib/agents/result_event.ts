/**
 * How a stream-json agent said it ended: the last `result` event of its output (Claude Code's
 * and Qwen Code's are the same).
 *
 * @module
 */
import type { AgentEnd } from "./agent.ts";

/**
 * How the agent said it ended: the last `result` event of its stream-json output, its turns and
 * its `subtype`; `null` for what it did not say (a line cut by the output cap says nothing).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { readAgentLog } from "./result_event.ts";
 * const log = '{"type":"result","subtype":"success","num_turns":3}\n';
 * assert.deepEqual(readAgentLog(log), { numTurns: 3, result: "success" });
 * ```
 */
export function readAgentLog(stdout: string): AgentEnd {
  let numTurns: number | null = null;
  let result: string | null = null;
  for (const line of stdout.split("\n")) {
    if (!line.startsWith("{") || !line.includes('"result"')) continue;
    try {
      const event = JSON.parse(line);
      if (event.type !== "result") continue;
      numTurns = typeof event.num_turns === "number" ? event.num_turns : null;
      result = typeof event.subtype === "string" ? event.subtype : null;
    } catch { /* a line cut by the output cap */ }
  }
  return { numTurns, result };
}
