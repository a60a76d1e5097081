import assert from "node:assert/strict";
import {
  CONFIG_DECLARATIONS,
  CONFIG_VARIABLES,
  defaultTokenizerPath,
  resolveConfig,
} from "../../lib/config/mod.ts";
import { ConfigError } from "../../lib/errors/mod.ts";

/** The value at `path` in `config` (a map's keys are steps of the path too). */
function at(config: object, path: readonly string[]): unknown {
  return path.reduce<unknown>(
    (node, key) => node instanceof Map ? node.get(key) : (node as Record<string, unknown>)[key],
    config,
  );
}

Deno.test("each variable is declared once, for one setting, in CONFIG_VARIABLES' order", () => {
  const names = CONFIG_DECLARATIONS.map(({ name }) => name);
  const paths = CONFIG_DECLARATIONS.map(({ path }) => path.join("."));
  assert.equal(new Set(names).size, names.length);
  assert.equal(new Set(paths).size, paths.length);
  assert.deepEqual(CONFIG_VARIABLES, names);
});

Deno.test("every setting is filled by a declared variable (workers and tokenizerPath via a rule)", () => {
  const declared = new Set(CONFIG_DECLARATIONS.map(({ path }) => path.join(".")));
  const filled: string[] = [];
  const walk = (node: object, path: readonly string[]) => {
    for (const [key, value] of node instanceof Map ? node : Object.entries(node)) {
      const here = [...path, key];
      if (!declared.has(here.join(".")) && typeof value === "object" && value !== null) {
        walk(value, here);
      } else filled.push(here.join("."));
    }
  };
  walk(resolveConfig({}), []);
  assert.deepEqual(filled, [...declared]);
});

Deno.test("every fallback parses with its variable's schema and lies within its bounds", () => {
  for (const { name, schema, fallback, bounds } of CONFIG_DECLARATIONS) {
    if (fallback === undefined) continue;
    const parsed = schema.safeParse(fallback);
    assert.ok(parsed.success, `${name}=${fallback}`);
    if (bounds === undefined) continue;
    assert.ok(bounds.min <= Number(fallback) && Number(fallback) <= bounds.max, name);
  }
});

Deno.test("an unset variable resolves as its fallback, or to null without one", () => {
  const defaults = resolveConfig({});
  for (const { name, path, fallback } of CONFIG_DECLARATIONS) {
    if (fallback !== undefined) {
      assert.deepEqual(resolveConfig({ [name]: fallback }), defaults, name);
    } else if (name === "TOKENIZER_PATH") {
      assert.equal(defaults.tokenizerPath, defaultTokenizerPath());
    } else if (name === "HOST_ID") {
      assert.equal(defaults.hostId, Deno.hostname().replace(/[^A-Za-z0-9._-]/g, "-").slice(0, 64));
    } else {
      assert.equal(at(defaults, path), null, name);
    }
  }
});

Deno.test("every integer variable accepts its bounds, refuses past them and says so", () => {
  const integers = CONFIG_DECLARATIONS.filter(({ bounds }) => bounds !== undefined);
  assert.ok(integers.length > 20, String(integers.length));
  for (const { name, path, expected, bounds } of integers) {
    const { min, max } = bounds!;
    assert.ok(expected.includes(`from ${min}`) && expected.includes(`to ${max}`), expected);
    assert.equal(at(resolveConfig({ [name]: String(min) }), path), min, name);
    assert.equal(at(resolveConfig({ [name]: String(max) }), path), max, name);
    for (const outside of [min - 1, max + 1]) {
      assert.throws(() => resolveConfig({ [name]: String(outside) }), {
        name: "ConfigError",
        message: `Invalid ${name}: expected ${expected}, got "${outside}"`,
      });
    }
  }
});

Deno.test("resolveConfig() names the first bad variable in declaration order, then the rules", () => {
  const variableOf = (env: Record<string, string>) => {
    try {
      resolveConfig(env);
    } catch (error) {
      if (error instanceof ConfigError) return error.variable;
      throw error;
    }
    return undefined;
  };
  assert.equal(variableOf({ CODEX_BIN: "codex", ROLLOUT_POLL_MS: "1", PORT: "x" }), "PORT");
  assert.equal(variableOf({ E2B_BOOT_ATTEMPTS: "0", MAX_SEGMENTS: "0" }), "MAX_SEGMENTS");
  assert.equal(variableOf({ SANDBOX_BACKEND: "e2b", PORT: "x" }), "PORT");
  assert.equal(
    variableOf({ SANDBOX_BACKEND: "e2b", KV_PATH: ":memory:", WORKERS: "2" }),
    "E2B_API_KEY",
  );
});
