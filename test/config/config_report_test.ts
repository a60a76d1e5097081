/**
 * The configuration in force, as `deno task config` prints it: every variable, where its value
 * came from, secrets masked (in the report and in the start-up error of a bad one); and
 * `serve.ts --config` / `--help` as a process.
 */
import assert from "node:assert/strict";
import { CONFIG_DECLARATIONS, configReport, resolveConfig } from "../../lib/config/mod.ts";
import { ConfigError } from "../../lib/errors/mod.ts";

const SECRETS = {
  ADMIN_TOKEN: "admin-secret-0123456789",
  SIGNING_SECRET: "signing-secret-0123456789",
  E2B_API_KEY: "e2b_secret_key_0123456789",
  STORE_URL: "postgres://gw:db-password-42@db.internal:5432/rg",
  ENGINE_WORKERS: "http://u:engine-password@w1:30000,http://w2:30000",
};

Deno.test("the report lists every variable once, in order, with where its value came from", () => {
  const report = configReport({ PORT: "9000", WORKERS: " " });
  assert.deepEqual(report.map((entry) => entry.name), CONFIG_DECLARATIONS.map((v) => v.name));
  const by = new Map(report.map((entry) => [entry.name, entry]));
  assert.deepEqual(by.get("PORT"), { name: "PORT", value: '"9000"', source: "environment" });
  assert.deepEqual(by.get("HOST"), { name: "HOST", value: '"127.0.0.1"', source: "default" });
  // Blank is unset, as resolveConfig() reads it.
  assert.equal(by.get("WORKERS")?.source, "default");
  assert.deepEqual(by.get("ADMIN_TOKEN"), {
    name: "ADMIN_TOKEN",
    value: "generated",
    source: "unset",
  });
});

Deno.test("no secret and no URL password is in the report, and each masked one is said to be set", () => {
  const report = configReport(SECRETS);
  const text = JSON.stringify(report);
  for (
    const secret of [
      "admin-secret",
      "signing-secret",
      "e2b_secret",
      "db-password",
      "engine-password",
    ]
  ) {
    assert.ok(!text.includes(secret), secret);
  }
  const by = new Map(report.map((entry) => [entry.name, entry.value]));
  assert.equal(by.get("ADMIN_TOKEN"), "*** (23 characters)");
  assert.equal(by.get("STORE_URL"), '"postgres://gw:***@db.internal:5432/rg"');
  assert.equal(by.get("ENGINE_WORKERS"), '"http://u:***@w1:30000,http://w2:30000"');
});

Deno.test("a bad secret's start-up error does not print it", () => {
  assert.throws(
    () => resolveConfig({ ADMIN_TOKEN: "short-secret" }),
    (error: Error) =>
      error instanceof ConfigError &&
      error.message ===
        "Invalid ADMIN_TOKEN: expected at least 16 characters, got *** (12 characters)",
  );
});

async function serve(args: string[], env: Record<string, string>) {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", new URL("../../functions/serve.ts", import.meta.url).pathname, ...args],
    env: { NO_COLOR: "1", ...env },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(output.stdout) + new TextDecoder().decode(output.stderr);
  return { code: output.code, text };
}

Deno.test("serve.ts --config prints the configuration in force and whether it is valid, and --help the usage; neither serves", async () => {
  const good = await serve(["--config"], { ...SECRETS, SANDBOX_BACKEND: "e2b", PORT: "1" });
  assert.equal(good.code, 0, good.text);
  assert.match(good.text, /^PORT +environment +"1"$/m);
  assert.match(good.text, /^ADMIN_TOKEN +environment +\*\*\* \(23 characters\)$/m);
  assert.match(good.text, /^The configuration is valid\.$/m);
  assert.ok(!good.text.includes("db-password") && !good.text.includes("admin-secret"));

  const bad = await serve(["--config"], { PORT: "99999" });
  assert.equal(bad.code, 1);
  assert.match(
    bad.text,
    /^The configuration is not valid: Invalid PORT: expected an integer from 0 to 65535, got "99999"$/m,
  );

  const help = await serve(["--help"], {});
  assert.equal(help.code, 0);
  assert.match(help.text, /^ {2}deno task serve --config /m);
  assert.match(help.text, /GET \/health\/ready/);
});
