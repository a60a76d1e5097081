/**
 * The registered engine dialects, the default first. `ENGINE_API` names one; a new dialect is a
 * file with its {@linkcode EngineDialect} record and a line here.
 *
 * @module
 */
import { ConfigError } from "../errors/mod.ts";
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

/**
 * The registered dialect `ENGINE_API` names.
 *
 * @throws {ConfigError} naming `ENGINE_API` and the known dialects.
 */
export function configuredDialect(
  name: string,
  dialects: readonly EngineDialect[] = ENGINE_DIALECTS,
): EngineDialect {
  const dialect = engineDialect(name, dialects);
  if (dialect !== undefined) return dialect;
  const known = dialects.map((known) => known.name).join(", ");
  throw new ConfigError(
    "ENGINE_API",
    `Invalid ENGINE_API: expected one of ${known}, got "${name}"`,
  );
}
