/**
 * Judgers are checked when the gateway starts: `deno task serve` with a judger that does not
 * exist, cannot load or gets bad options exits at once with a message naming it, instead of
 * failing the first evaluation.
 */
import assert from "node:assert/strict";
import { ADMIN_TOKEN } from "../_gateway.ts";

const ROOT = new URL("../../", import.meta.url).pathname;

/** Runs `functions/serve.ts` with `env` and returns how it ended; it must not start listening. */
async function start(env: Record<string, string>): Promise<{ code: number; stderr: string }> {
  const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "functions/serve.ts"],
    cwd: ROOT,
    env: { NO_COLOR: "1", HOST: "127.0.0.1", PORT: "0", KV_PATH: ":memory:", ADMIN_TOKEN, ...env },
    stdin: "null",
  }).output();
  assert.doesNotMatch(new TextDecoder().decode(stdout), /listening/);
  return { code, stderr: new TextDecoder().decode(stderr) };
}

Deno.test("the gateway does not start when DEFAULT_JUDGER names a judger that does not exist", async () => {
  const { code, stderr } = await start({ DEFAULT_JUDGER: "nonexistent_judger" });
  assert.equal(code, 1);
  assert.equal(
    stderr.trim(),
    'Cannot start: Unknown judger "nonexistent_judger" in DEFAULT_JUDGER: configured judgers are tests',
  );
});

Deno.test("the gateway does not start when JUDGERS names a module that is missing or refuses its options", async () => {
  const missing = await start({
    JUDGERS: JSON.stringify({ rubric: { use: "./judgers/rubric_missing.ts" } }),
  });
  assert.equal(missing.code, 1);
  assert.match(
    missing.stderr,
    /^Cannot start: Judger "rubric" cannot be loaded from "\.\/judgers\/rubric_missing\.ts": /,
  );
  const badOptions = await start({
    JUDGERS: JSON.stringify({
      concise: { use: "./fixtures/judgers/length_penalty.ts", options: { per_line: -1 } },
    }),
  });
  assert.equal(badOptions.code, 1);
  assert.equal(
    badOptions.stderr.trim(),
    'Cannot start: Judger "concise" has bad options: per_line must be a number ≥ 0',
  );
  const notJson = await start({ JUDGERS: "{rubric}" });
  assert.equal(notJson.code, 1);
  assert.match(notJson.stderr, /^Cannot start: Invalid JUDGERS: expected a JSON object like /);
});
