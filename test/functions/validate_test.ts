/**
 * `POST /evaluate/validate` and `/rollout`'s `validate` over HTTP, on the local backend: a task
 * proven once and its verdict kept, a broken task refused before any sandbox boots for its jobs,
 * a Harbor folder proven through its own solution, and the bodies refused.
 */
import assert from "node:assert/strict";
import { ADMIN_HEADERS, startGateway, type TestGateway } from "../_gateway.ts";
import { harborFixture } from "../evaluate/_harbor.ts";
import { fixtureTask } from "../evaluate/_tasks.ts";

async function post(gw: TestGateway, path: string, body: unknown) {
  const response = await gw.fetch(path, {
    method: "POST",
    headers: ADMIN_HEADERS,
    body: JSON.stringify(body),
  });
  return { status: response.status, body: await response.json() };
}

/** Sandboxes booted by the gateway so far, as `/metrics` counts them. */
async function boots(gw: TestGateway): Promise<number> {
  const text = await (await gw.fetch("/metrics", { headers: ADMIN_HEADERS })).text();
  return [...text.matchAll(/^rollout_gateway_sandbox_boots_total\{[^}]*\} (\d+)$/gm)]
    .reduce((sum, match) => sum + Number(match[1]), 0);
}

/** Jobs queued by the gateway so far, as `/metrics` counts them. */
async function queued(gw: TestGateway): Promise<number> {
  const text = await (await gw.fetch("/metrics", { headers: ADMIN_HEADERS })).text();
  return [
    ...text.matchAll(/^rollout_gateway_rollout_jobs_total\{[^}]*phase="queued"[^}]*\} (\d+)$/gm),
  ]
    .reduce((sum, match) => sum + Number(match[1]), 0);
}

Deno.test("POST /evaluate/validate proves a fixture task with its gold patch, and answers a second ask from the kept verdict", async () => {
  const gw = await startGateway();
  try {
    const { task, gold } = await fixtureTask("python_unittest");
    const first = await post(gw, "/evaluate/validate", { task, gold_patch: gold });
    assert.equal(first.status, 200, JSON.stringify(first.body));
    const { checked_at, duration_ms, digest, base, gold: goldRuns, ...rest } = first.body;
    assert.deepEqual(rest, {
      valid: true,
      problems: [],
      flaky: [],
      flaky_count: 0,
      gold_source: "request",
      backend: "local",
      cached: false,
    });
    assert.match(digest, /^[0-9a-f]{32}$/);
    assert.ok(Date.parse(checked_at) > 0 && duration_ms > 0);
    assert.deepEqual(base.map((run: { counts: unknown }) => run.counts), [
      { passed: 3, failed: 2 },
      { passed: 3, failed: 2 },
    ]);
    assert.deepEqual(goldRuns.map((run: { reason: string }) => run.reason), ["passed", "passed"]);
    const booted = await boots(gw);
    assert.equal(booted, 4);
    const second = await post(gw, "/evaluate/validate", { task, gold_patch: gold });
    assert.deepEqual(second.body, { ...first.body, cached: true });
    assert.equal(await boots(gw), booted);
  } finally {
    await gw.close();
  }
});

Deno.test("a task with a mistyped test path is invalid, and a /rollout of 8 asking to validate it is refused with 422 without a sandbox booted or a job queued", async () => {
  const gw = await startGateway({ worker: true });
  try {
    const { task } = await fixtureTask("python_pytest");
    const typo = {
      ...task,
      f2p_filename: "test_f2p.txt",
      f2p_cmd: "python3 -m pytest -rA tests/test_f2p_typo.py",
    };
    const checked = await post(gw, "/evaluate/validate", { task: typo });
    assert.equal(checked.status, 200);
    assert.deepEqual([checked.body.valid, checked.body.problems], [false, [
      "at the base commit no test ran (no_tests_ran): the runner found no such test: " +
      "ERROR: file or directory not found: tests/test_f2p_typo.py",
    ]]);
    const booted = await boots(gw);
    const refused = await post(gw, "/rollout", { task: typo, n: 8, validate: true });
    assert.deepEqual([refused.status, refused.body.error.type], [422, "unprocessable_error"]);
    assert.equal(
      refused.body.error.message,
      "task: not valid, nothing queued (POST /evaluate/validate shows its runs): " +
        checked.body.problems[0],
    );
    assert.deepEqual([await boots(gw), await queued(gw)], [booted, 0]);
  } finally {
    await gw.close();
  }
});

Deno.test("a valid task's /rollout with validate is queued once proven, and its stored group keeps no gold patch", async () => {
  const gw = await startGateway();
  try {
    const { task, gold } = await fixtureTask("node_test");
    const response = await post(gw, "/rollout", {
      task,
      n: 2,
      validate: { gold_patch: gold },
    });
    assert.equal(response.status, 202, JSON.stringify(response.body));
    assert.equal(response.body.jobs.length, 2);
    assert.deepEqual([await boots(gw), await queued(gw)], [4, 2]);
    // The group's stored settings say nothing of the validation.
    const values: string[] = [];
    for await (const entry of gw.kv.list({ prefix: [] })) values.push(JSON.stringify(entry.value));
    const settings = values.filter((value) => value.includes(response.body.group_id));
    assert.ok(settings.some((value) => value.includes('"max_attempts":3')));
    assert.deepEqual(settings.filter((value) => value.includes("validate")), []);
  } finally {
    await gw.close();
  }
});

Deno.test("a Harbor folder is validated through its solution/solve.sh over HTTP", async () => {
  const gw = await startGateway();
  try {
    const checked = await post(gw, "/evaluate/validate", {
      task: { harbor: harborFixture("fizzbuzz") },
    });
    assert.equal(checked.status, 200, JSON.stringify(checked.body));
    assert.deepEqual(
      [checked.body.valid, checked.body.problems, checked.body.gold_source],
      [true, [], "solution"],
    );
    const rollout = await post(gw, "/rollout", {
      task: { harbor: harborFixture("fizzbuzz") },
      validate: true,
    });
    assert.equal(rollout.status, 202, JSON.stringify(rollout.body));
    assert.equal(await boots(gw), 5); // the solution, 2 + 2 runs; the rollout's ask was kept
  } finally {
    await gw.close();
  }
});

Deno.test("validation bodies are refused with 400 naming the field", async () => {
  const gw = await startGateway();
  try {
    const { task } = await fixtureTask("python_unittest");
    const cases: [string, unknown, string][] = [
      ["/evaluate/validate", { task, gold: "x" }, "unknown field gold"],
      ["/evaluate/validate", { task, gold_patch: "" }, "gold_patch: "],
      ["/evaluate/validate", { task: { ...task, eval_cmd: "true" } }, "task: expected exactly one"],
      [
        "/rollout",
        { task, validate: { gold_patch: "x", extra: 1 } },
        "unknown field validate.extra",
      ],
      [
        "/rollout",
        {
          task: { environment: "http://127.0.0.1:9/", task_index: 0 },
          agent: { harness: "env_loop" },
          validate: true,
        },
        "validate: a tool environment's task has no tests to validate",
      ],
    ];
    for (const [path, body, message] of cases) {
      const response = await post(gw, path, body);
      assert.equal(response.status, 400, JSON.stringify([path, body]));
      assert.ok(
        response.body.error.message.includes(message),
        `${message} not in ${response.body.error.message}`,
      );
    }
    const unauthorized = await gw.fetch("/evaluate/validate", {
      method: "POST",
      body: JSON.stringify({ task }),
    });
    assert.equal(unauthorized.status, 401);
    await unauthorized.body?.cancel();
    assert.equal(await boots(gw), 0);
  } finally {
    await gw.close();
  }
});
