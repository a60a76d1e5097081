/**
 * The registered engine dialects, the default first. `ENGINE_API` names one; a new dialect is a
 * file with its {@linkcode EngineDialect} record and a line here.
 *
 * @module
 */
import type { EngineDialect } from "./engine.ts";
import { SGLANG } from "./sglang.ts";
import { VLLM } from "./vllm.ts";

/** Every engine dialect the gateway speaks. */
export const ENGINE_DIALECTS: readonly EngineDialect[] = [SGLANG, VLLM];

/** The dialect called `name`, or `undefined`. */
export function engineDialect(
  name: string,
  dialects: readonly EngineDialect[] = ENGINE_DIALECTS,
): EngineDialect | undefined {
  return dialects.find((dialect) => dialect.name === name);
}
