/**
 * The effective configuration, variable by variable: the value in force, where it came from (the
 * environment, or the default), secrets masked. What `deno task config` prints.
 *
 * @module
 */
import { CONFIG_DECLARATIONS } from "./config_schema.ts";
import { readRaw, shownValue } from "./resolve_config.ts";

/** One variable in the report. */
export interface ConfigEntry {
  readonly name: string;
  /**
   * Its value as it may be printed: quoted, a secret as `***` and its length, a URL's password
   * as `***`; for an unset variable without a default, what that means (`generated`, `unset`).
   */
  readonly value: string;
  /** `environment` (set there), `default` (its fallback), or `unset` (no value: `value` says). */
  readonly source: "environment" | "default" | "unset";
}

/**
 * Every variable the gateway reads, in the documentation's order, as `env` sets it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { configReport } from "./config_report.ts";
 * const report = configReport({ PORT: "9000", ADMIN_TOKEN: "a-long-enough-secret" });
 * assert.deepEqual(report[0], { name: "PORT", value: '"9000"', source: "environment" });
 * assert.deepEqual(report.find((entry) => entry.name === "ADMIN_TOKEN"), {
 *   name: "ADMIN_TOKEN",
 *   value: "*** (20 characters)",
 *   source: "environment",
 * });
 * assert.deepEqual(report.find((entry) => entry.name === "HOST")?.source, "default");
 * ```
 */
export function configReport(env: Record<string, string | undefined>): ConfigEntry[] {
  return CONFIG_DECLARATIONS.map((variable) => {
    const set = (env[variable.name]?.trim() ?? "") !== "";
    const raw = readRaw(env, variable);
    if (raw === undefined) return { name: variable.name, value: variable.shown, source: "unset" };
    return {
      name: variable.name,
      value: shownValue(variable, raw),
      source: set ? "environment" : "default",
    };
  });
}

/**
 * The report as aligned text, one variable a line: name, source, value.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { formatConfigReport } from "./config_report.ts";
 * assert.equal(
 *   formatConfigReport([{ name: "PORT", value: '"8080"', source: "default" }]),
 *   'PORT  default  "8080"\n',
 * );
 * ```
 */
export function formatConfigReport(entries: readonly ConfigEntry[]): string {
  const name = Math.max(...entries.map((entry) => entry.name.length));
  const source = Math.max(...entries.map((entry) => entry.source.length));
  return entries.map((entry) =>
    `${entry.name.padEnd(name)}  ${entry.source.padEnd(source)}  ${entry.value}\n`
  ).join("");
}
