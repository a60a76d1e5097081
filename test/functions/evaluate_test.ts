/**
 * `POST /evaluate` over HTTP: the minimal body scripts rely on, the full response shape, the
 * E2B backend chosen by configuration, configured judgers, refusals, and a caller who leaves.
 */
import assert from "node:assert/strict";
import { startFakeE2b } from "../../fixtures/fake_e2b.ts";
import { LocalBackend } from "../../lib/sandbox/mod.ts";
import { ADMIN_HEADERS, startGateway, type TestGateway } from "../_gateway.ts";
import { listDir, processesWith, waitFor } from "../_host.ts";
import { fixtureTask, scratchRepo } from "../evaluate/_tasks.ts";

const ADMIN = ADMIN_HEADERS;

async function post(gw: TestGateway, body: unknown, headers: Record<string, string> = ADMIN) {
  const response = await gw.fetch("/evaluate", {
    method: "POST",
    headers,
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  return { status: response.status, body: await response.json() };
}

Deno.test("POST /evaluate takes the minimal body and answers with the reward and its evidence", async () => {
  const gw = await startGateway();
  const dir = await Deno.makeTempDir();
  try {
    const repo = await scratchRepo(dir, { "greet.sh": "echo hello\n" });
    const patch = [
      "diff --git a/greet.sh b/greet.sh",
      "--- a/greet.sh",
      "+++ b/greet.sh",
      "@@ -1 +1 @@",
      "-echo hello",
      "+echo hello world",
      "",
    ].join("\n");
    const { status, body } = await post(gw, {
      task: {
        repo: repo.path,
        base_commit: repo.commit,
        eval_cmd: 'test "$(bash greet.sh)" = "hello world" && echo checked',
      },
      patch,
    });
    assert.equal(status, 200, JSON.stringify(body));
    assert.deepEqual(Object.keys(body).sort(), [
      "applied_cleanly",
      "detail",
      "duration_ms",
      "exit_code",
      "judger",
      "log_tail",
      "reason",
      "sandbox",
      "score",
      "tampered",
      "tests",
      "timings",
    ]);
    assert.deepEqual(
      { ...body, duration_ms: 0, timings: {}, sandbox: { ...body.sandbox, id: "" } },
      {
        score: 1,
        applied_cleanly: true,
        reason: "passed",
        detail: null,
        tests: { passed: [], failed: [] },
        tampered: [],
        exit_code: 0,
        log_tail: "checked\n",
        duration_ms: 0,
        judger: "tests",
        sandbox: { backend: "local", id: "" },
        timings: {},
      },
    );
    assert.ok(body.duration_ms > 0);
  } finally {
    await gw.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("POST /evaluate grades a fixture task named by fixture:<name>", async () => {
  const gw = await startGateway();
  try {
    const fixture = await fixtureTask("python_unittest");
    const gold = await post(gw, { task: fixture.task, patch: fixture.gold });
    const wrong = await post(gw, { task: fixture.task, patch: fixture.wrong });
    assert.deepEqual([gold.status, gold.body.score, wrong.status, wrong.body.score], [
      200,
      1,
      200,
      0,
    ]);
    assert.deepEqual(wrong.body.tests.failed, ["tests.test_calc.TestCalc.test_mean_fraction"]);
  } finally {
    await gw.close();
  }
});

Deno.test("POST /evaluate uses E2B when configured: the gold patch scores 1 in a fake E2B sandbox", async () => {
  const fake = await startFakeE2b();
  const gw = await startGateway({
    env: { SANDBOX_BACKEND: "e2b", ...fake.env, E2B_BOOT_BACKOFF_MS: "1" },
  });
  try {
    const fixture = await fixtureTask("python_pytest");
    const { status, body } = await post(gw, { task: fixture.task, patch: fixture.gold });
    assert.equal(status, 200, JSON.stringify(body));
    assert.deepEqual([body.score, body.sandbox.backend], [1, "e2b"]);
    assert.deepEqual(fake.live(), []);
  } finally {
    await gw.close();
    await fake.close();
  }
});

Deno.test("POST /evaluate scores with a configured judger that a task names", async () => {
  const gw = await startGateway({
    env: {
      JUDGERS: JSON.stringify({
        concise: { use: "./fixtures/judgers/length_penalty.ts", options: { per_line: 0.05 } },
      }),
    },
  });
  try {
    const fixture = await fixtureTask("node_test");
    const { status, body } = await post(gw, {
      task: { ...fixture.task, judger: "concise" },
      patch: fixture.gold,
    });
    assert.equal(status, 200, JSON.stringify(body));
    assert.equal(body.judger, "concise");
    assert.equal(body.reason, "passed");
    assert.ok(body.changed_lines > 0);
    assert.equal(body.score, Math.max(0.5, 1 - 0.05 * body.changed_lines));
  } finally {
    await gw.close();
  }
});

Deno.test("POST /evaluate refuses bad credentials and bad bodies with the error envelope", async () => {
  const gw = await startGateway();
  try {
    const fixture = await fixtureTask("node_test");
    const valid = { task: fixture.task, patch: fixture.gold };
    const session = await gw.openSession();
    const cases: [unknown, Record<string, string>, number, string, RegExp][] = [
      [
        valid,
        { "content-type": "application/json" },
        401,
        "authentication_error",
        /Missing admin token/,
      ],
      [
        valid,
        { ...ADMIN, authorization: "Bearer wrong-token" },
        401,
        "authentication_error",
        /Invalid admin token/,
      ],
      [
        valid,
        { ...ADMIN, authorization: `Bearer ${session.token}` },
        403,
        "permission_error",
        /session token/,
      ],
      ["{not json", ADMIN, 400, "invalid_request_error", /not valid JSON/],
      [{ task: fixture.task }, ADMIN, 400, "invalid_request_error", /^patch: field required/],
      [
        { task: { ...fixture.task, f2p_script: "x" }, patch: "" },
        ADMIN,
        400,
        "invalid_request_error",
        /exactly one of eval_cmd, f2p_script, or fail_to_pass/,
      ],
      [
        { task: { ...fixture.task, judger: "llm" }, patch: "" },
        ADMIN,
        400,
        "invalid_request_error",
        /^Unknown judger "llm": configured judgers are tests$/,
      ],
      [
        { task: { ...fixture.task, repo: "/nonexistent/repo" }, patch: "" },
        ADMIN,
        400,
        "invalid_request_error",
        /^Repository "\/nonexistent\/repo" is not a git repository on this machine$/,
      ],
      [
        { task: { ...fixture.task, repo: "fixture:no_such_task" }, patch: "" },
        ADMIN,
        400,
        "invalid_request_error",
        /^Unknown fixture "no_such_task"/,
      ],
    ];
    for (const [body, headers, status, type, message] of cases) {
      const response = await post(gw, body, headers);
      assert.equal(response.status, status, JSON.stringify(response.body));
      assert.equal(response.body.type, "error");
      assert.equal(response.body.error.type, type);
      assert.match(response.body.error.message, message);
    }
    assert.deepEqual(await listDir(`${gw.deps.config.sandboxRoot}/sandboxes`), []);
  } finally {
    await gw.close();
  }
});

Deno.test("POST /evaluate answers 503 naming what is missing when bubblewrap is not installed", async () => {
  const root = await Deno.makeTempDir();
  const sandbox = new LocalBackend({ root, bwrap: "/nonexistent/bwrap" });
  const gw = await startGateway({ sandbox });
  try {
    const fixture = await fixtureTask("node_test");
    const { status, body } = await post(gw, { task: fixture.task, patch: fixture.gold });
    assert.equal(status, 503);
    assert.deepEqual(body.error, {
      type: "unavailable_error",
      message:
        'Local sandboxes are unavailable: "/nonexistent/bwrap" is not installed (Debian: apt-get install bubblewrap)',
    });
  } finally {
    await gw.close();
    await sandbox.close();
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("POST /evaluate whose caller leaves kills its sandbox", async () => {
  const gw = await startGateway();
  const dir = await Deno.makeTempDir();
  try {
    const marker = `rg_left_${crypto.randomUUID().slice(0, 8)}`;
    const repo = await scratchRepo(dir, { "README.md": "x\n" });
    const controller = new AbortController();
    const request = fetch(`${gw.url}/evaluate`, {
      method: "POST",
      headers: ADMIN,
      body: JSON.stringify({
        task: {
          repo: repo.path,
          base_commit: repo.commit,
          eval_cmd: `python3 -c "import time; time.sleep(1000)  # ${marker}"`,
        },
        patch: "",
      }),
      signal: controller.signal,
    });
    await waitFor(async () => (await processesWith(marker)).length > 0, "the test to start");
    controller.abort();
    await assert.rejects(request);
    // The gateway notices the disconnect and kills the sandbox; wait for that, not for a time.
    await waitFor(async () => (await processesWith(marker)).length === 0, "the test to be killed");
    const sandboxes = `${gw.deps.config.sandboxRoot}/sandboxes`;
    await waitFor(async () => (await listDir(sandboxes)).length === 0, "the work tree to go");
  } finally {
    await gw.close();
    await Deno.remove(dir, { recursive: true });
  }
});
