/**
 * What `/evaluate` and `/rollout` take from a client is bounded where it enters: a command the
 * kernel could not start, a group's settings too large for its KV value, or a job id too long
 * for a KV key is refused with a 4xx naming the field and its limit — never a 500 later — and
 * nothing is queued or booted.
 */
import assert from "node:assert/strict";
import { MAX_COMMAND_BYTES, MAX_ENV_BYTES, MAX_PROTECTED_BYTES } from "../../lib/evaluate/mod.ts";
import { MAX_JOB_ID_CHARS, MAX_ROLLOUT_SETTINGS_CHARS } from "../../lib/rollout/mod.ts";
import { ADMIN_HEADERS, kvSnapshot, startGateway, type TestGateway } from "../_gateway.ts";

const TASK = {
  repo: "fixture:python_unittest",
  base_commit: "1bdf00de100a0db07eae541924db3a45524b6156",
  eval_cmd: "true",
};

async function post(gw: TestGateway, path: string, body: unknown): Promise<Response> {
  return await gw.app.request(path, {
    method: "POST",
    headers: ADMIN_HEADERS,
    body: JSON.stringify(body),
  });
}

/** Asserts a 400 in the envelope whose message matches `pattern`. */
async function assertRefused(response: Response, pattern: RegExp): Promise<void> {
  const text = await response.text();
  assert.equal(response.status, 400, text);
  const body = JSON.parse(text);
  assert.equal(body.error.type, "invalid_request_error");
  assert.match(body.error.message, pattern);
}

Deno.test("POST /evaluate refuses commands, test lists, env and protected paths no process could be given, before any sandbox", async () => {
  const gw = await startGateway();
  try {
    const before = await kvSnapshot(gw.kv);
    const ids = (n: number) =>
      Array.from({ length: n }, (_, i) => `tests.test_${i}`.padEnd(100, "x"));
    const cases: [Record<string, unknown>, RegExp][] = [
      // 60,000 two-byte characters: under a character count, over the byte limit.
      [{ eval_cmd: "é".repeat(60_000) }, new RegExp(`^task\\.eval_cmd: .*${MAX_COMMAND_BYTES}`)],
      [
        { eval_cmd: undefined, runner: "unittest", fail_to_pass: ids(2_000) },
        new RegExp(`^task\\.fail_to_pass: .* \\d+ bytes, at most ${MAX_COMMAND_BYTES}$`),
      ],
      [
        { env: { BIG: "v".repeat(200_000) } },
        new RegExp(`^task\\.env: \\d+ bytes of names and values, at most ${MAX_ENV_BYTES}$`),
      ],
      [
        { protected_paths: Array.from({ length: 100 }, (_, i) => `p${i}`.padEnd(400, "x")) },
        new RegExp(`^task\\.protected_paths: .* at most ${MAX_PROTECTED_BYTES}$`),
      ],
      [
        {
          metadata: Object.fromEntries(
            Array.from({ length: 100 }, (_, i) => [`k${i}`, "v".repeat(999)]),
          ),
        },
        /^task\.metadata: expected at most 16384 bytes of JSON$/,
      ],
    ];
    for (const [change, pattern] of cases) {
      await assertRefused(
        await post(gw, "/evaluate", { task: { ...TASK, ...change }, patch: "" }),
        pattern,
      );
    }
    assert.deepEqual(await kvSnapshot(gw.kv), before);
  } finally {
    await gw.close();
  }
});

Deno.test("POST /rollout refuses settings too large for the group's KV value, naming the field, and queues nothing", async () => {
  const gw = await startGateway();
  try {
    const before = await kvSnapshot(gw.kv);
    const tools = Array.from({ length: 200 }, (_, i) => `Tool${i}`.padEnd(250, "x"));
    await assertRefused(
      await post(gw, "/rollout", { task: TASK, agent: { disallowed_tools: tools } }),
      new RegExp(
        `^agent: the settings besides the task take \\d+ characters of JSON, at most ${MAX_ROLLOUT_SETTINGS_CHARS}$`,
      ),
    );
    await assertRefused(
      await post(gw, "/rollout", { task: TASK, metadata: { blob: "m".repeat(17_000) } }),
      /^metadata: \d+ bytes of JSON, at most 16128 \(each job's session adds/,
    );
    await assertRefused(
      await post(gw, "/rollout", { task: TASK, agent: { prompt_template: "p".repeat(20_000) } }),
      /^agent\.prompt_template: Too big: expected string to have <=16384 characters$/,
    );
    await assertRefused(
      await post(gw, "/rollout", {
        task: { ...TASK, problem_statement: "s".repeat(60_000) },
        agent: { prompt_template: "{problem_statement}\n{problem_statement}" },
      }),
      new RegExp(`^agent\\.prompt_template: the agent's command, .* at most ${MAX_COMMAND_BYTES}$`),
    );
    assert.deepEqual(await kvSnapshot(gw.kv), before);

    // Settings just under the bound, in characters V8 stores in two bytes, fit the group's value.
    const env = { NOTE: "€".repeat(MAX_ROLLOUT_SETTINGS_CHARS - 1_000) };
    const accepted = await post(gw, "/rollout", { task: TASK, n: 99, agent: { env } });
    assert.equal(accepted.status, 202, await accepted.clone().text());
    assert.equal((await accepted.json()).jobs.length, 99);
  } finally {
    await gw.close();
  }
});

Deno.test("a job id too long for a KV key is an unknown job: GET and DELETE /rollout/:id answer 404", async () => {
  const gw = await startGateway();
  try {
    const id = "j".repeat(MAX_JOB_ID_CHARS + 10_000);
    for (const method of ["GET", "DELETE"]) {
      const response = await gw.app.request(`/rollout/${id}`, { method, headers: ADMIN_HEADERS });
      const body = await response.json();
      assert.equal(response.status, 404);
      assert.equal(body.error.type, "not_found_error");
      assert.equal(body.error.message, `Rollout job "${"j".repeat(64)}…" not found`);
    }
  } finally {
    await gw.close();
  }
});
