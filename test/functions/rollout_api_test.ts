/**
 * The rollout API's refusals: credentials, bodies, unknown jobs and groups, an unconfigured
 * backend, a repository or commit that is not there — each with the error envelope and nothing
 * queued.
 */
import assert from "node:assert/strict";
import { listActiveRolloutJobs } from "../../lib/rollout/mod.ts";
import { ADMIN_HEADERS, startGateway } from "../_gateway.ts";

const ADMIN = ADMIN_HEADERS;
const TASK = { repo: "fixture:python_unittest", base_commit: "1bdf00de", eval_cmd: "true" };

Deno.test("the rollout API refuses bad credentials, bad bodies and unknown ids, queueing nothing", async () => {
  const gw = await startGateway();
  try {
    const session = await gw.openSession();
    const valid = JSON.stringify({ task: TASK });
    const cases: [
      string,
      string,
      string | undefined,
      Record<string, string>,
      number,
      string,
      RegExp,
    ][] = [
      [
        "POST",
        "/rollout",
        valid,
        { "content-type": "application/json" },
        401,
        "authentication_error",
        /Missing admin token/,
      ],
      [
        "POST",
        "/rollout",
        valid,
        { ...ADMIN, authorization: "Bearer nope-nope-nope" },
        401,
        "authentication_error",
        /Invalid admin token/,
      ],
      [
        "POST",
        "/rollout",
        valid,
        { ...ADMIN, authorization: `Bearer ${session.token}` },
        403,
        "permission_error",
        /session token/,
      ],
      [
        "GET",
        "/rollout/job_x",
        undefined,
        { "content-type": "application/json" },
        401,
        "authentication_error",
        /Missing/,
      ],
      ["POST", "/rollout", "{", ADMIN, 400, "invalid_request_error", /not valid JSON/],
      [
        "POST",
        "/rollout",
        JSON.stringify({ n: 2 }),
        ADMIN,
        400,
        "invalid_request_error",
        /^task: field required/,
      ],
      [
        "POST",
        "/rollout",
        JSON.stringify({ task: TASK, n: 0 }),
        ADMIN,
        400,
        "invalid_request_error",
        /^n: /,
      ],
      [
        "POST",
        "/rollout",
        JSON.stringify({ task: TASK, agent: { harness: "aider" } }),
        ADMIN,
        400,
        "invalid_request_error",
        /^agent\.harness: unknown type; expected one of claude_code, qwen_code, codex, command, env_loop$/,
      ],
      [
        "POST",
        "/rollout",
        JSON.stringify({ task: TASK, sandbox: { backend: "e2b" } }),
        ADMIN,
        400,
        "invalid_request_error",
        /^sandbox\.backend: "e2b" is not configured here/,
      ],
      // The repository, checked as /evaluate would refuse it, before any job is queued.
      [
        "POST",
        "/rollout",
        JSON.stringify({ task: { ...TASK, repo: "/nowhere/repo" } }),
        ADMIN,
        400,
        "invalid_request_error",
        /^Repository "\/nowhere\/repo" is not a git repository on this machine$/,
      ],
      [
        "POST",
        "/rollout",
        JSON.stringify({ task: { ...TASK, base_commit: "deadbeef" } }),
        ADMIN,
        400,
        "invalid_request_error",
        /^Commit "deadbeef" is not in "fixture:python_unittest"$/,
      ],
      [
        "POST",
        "/rollout",
        JSON.stringify({ task: { ...TASK, repo: "fixture:no_such_task" } }),
        ADMIN,
        400,
        "invalid_request_error",
        /^Unknown fixture "no_such_task"/,
      ],
      [
        "GET",
        "/rollout/job_000000000000000000000000",
        undefined,
        ADMIN,
        404,
        "not_found_error",
        /^Rollout job "job_0+" not found$/,
      ],
      [
        "DELETE",
        "/rollout/job_000000000000000000000000",
        undefined,
        ADMIN,
        404,
        "not_found_error",
        /not found/,
      ],
      [
        "GET",
        "/rollout?group_id=grp_000000000000000000000000",
        undefined,
        ADMIN,
        404,
        "not_found_error",
        /^Rollout group "grp_0+" not found$/,
      ],
      ["GET", "/rollout?group_id=x", undefined, ADMIN, 400, "invalid_request_error", /^group_id: /],
      [
        "GET",
        "/rollout/job_x?format=pdf",
        undefined,
        ADMIN,
        400,
        "invalid_request_error",
        /^format: /,
      ],
    ];
    for (const [method, path, body, headers, status, type, message] of cases) {
      const response = await fetch(`${gw.url}${path}`, { method, headers, body });
      const json = await response.json();
      assert.equal(response.status, status, `${method} ${path}: ${JSON.stringify(json)}`);
      assert.deepEqual([json.type, json.error.type], ["error", type], `${method} ${path}`);
      assert.match(json.error.message, message, `${method} ${path}`);
    }
    assert.deepEqual(await listActiveRolloutJobs(gw.kv), []);
  } finally {
    await gw.close();
  }
});

Deno.test("POST /rollout answers 202 with the group and one job per sample, queued", async () => {
  const gw = await startGateway();
  try {
    const response = await fetch(`${gw.url}/rollout`, {
      method: "POST",
      headers: ADMIN,
      body: JSON.stringify({ task: TASK, n: 3 }),
    });
    const body = await response.json();
    assert.equal(response.status, 202);
    assert.match(body.group_id, /^grp_[0-9a-f]{24}$/);
    assert.equal(body.jobs.length, 3);
    // No worker runs in this gateway: they stay queued, with their place in the group.
    const views = await Promise.all(
      body.jobs.map(async ({ id }: { id: string }) =>
        await (await fetch(`${gw.url}/rollout/${id}`, { headers: ADMIN })).json()
      ),
    );
    assert.deepEqual(
      views.map((v) => [v.phase, v.index, v.attempt, v.group_id, v.result, v.progress]),
      [0, 1, 2].map((i) => [
        "queued",
        i,
        0,
        body.group_id,
        null,
        { turns: 0, tokens: 0, elapsed_ms: 0 },
      ]),
    );
    assert.deepEqual(
      await listActiveRolloutJobs(gw.kv),
      body.jobs.map((j: { id: string }) => j.id).sort(),
    );
  } finally {
    await gw.close();
  }
});

Deno.test("a group of the largest size is queued in one commit", async () => {
  const gw = await startGateway();
  try {
    const response = await fetch(`${gw.url}/rollout`, {
      method: "POST",
      headers: ADMIN,
      body: JSON.stringify({ task: TASK, n: 256 }),
    });
    const body = await response.json();
    assert.equal(response.status, 202, JSON.stringify(body));
    assert.equal(body.jobs.length, 256);
    assert.equal((await listActiveRolloutJobs(gw.kv)).length, 256);
  } finally {
    await gw.close();
  }
});
