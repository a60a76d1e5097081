/**
 * Harbor task folders over HTTP: `POST /evaluate` with `task: {harbor}` on the local backend
 * (each fixture's gold patch scores 1, no patch 0), a broken folder refused, `GET /tasks`
 * listing a folder of tasks, and one fixture solved through `POST /rollout` by a stdlib agent.
 */
import assert from "node:assert/strict";
import { getRolloutGroup, readRolloutTask } from "../../lib/rollout/mod.ts";
import { ADMIN_HEADERS, startGateway, type TestGateway } from "../_gateway.ts";
import {
  copyFixture,
  FIZZBUZZ_FACTS,
  HARBOR_FIXTURES,
  HARBOR_FIXTURES_DIR,
  harborFixture,
  harborGold,
} from "../evaluate/_harbor.ts";
import { awaitJob, miniSweAgent, oneCommand, submit, toolCall } from "../rollout/_rollout.ts";

async function post(gw: TestGateway, body: unknown) {
  const response = await gw.fetch("/evaluate", {
    method: "POST",
    headers: ADMIN_HEADERS,
    body: JSON.stringify(body),
  });
  return { status: response.status, body: await response.json() };
}

async function tasks(gw: TestGateway, query: string, headers: HeadersInit = ADMIN_HEADERS) {
  const response = await gw.fetch(`/tasks${query}`, { headers });
  return { status: response.status, body: await response.json() };
}

Deno.test("POST /evaluate grades a Harbor task folder: the gold patch scores 1, no patch 0", async () => {
  const gw = await startGateway();
  try {
    for (const name of HARBOR_FIXTURES) {
      const task = { harbor: harborFixture(name) };
      const gold = await post(gw, { task, patch: await harborGold(name) });
      assert.equal(gold.status, 200, JSON.stringify(gold.body));
      assert.deepEqual(
        [gold.body.score, gold.body.reason, gold.body.verifier.reward, gold.body.sandbox.backend],
        [1, "passed", 1, "local"],
        name,
      );
      const empty = await post(gw, { task, patch: "" });
      assert.equal(empty.status, 200, JSON.stringify(empty.body));
      assert.deepEqual([empty.body.score, empty.body.reason], [0, "tests_failed"], name);
    }
    const words = await post(gw, {
      task: { harbor: harborFixture("word_count") },
      patch: await harborGold("word_count"),
    });
    assert.deepEqual(words.body.verifier, {
      file: "reward.json",
      reward: 1,
      metrics: { passed: 6, total: 6 },
    });
  } finally {
    await gw.close();
  }
});

Deno.test("POST /evaluate refuses a broken or missing Harbor folder with 400 naming task.harbor", async () => {
  const gw = await startGateway();
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "rg-harbor-http-" }));
  try {
    const broken = await copyFixture("fizzbuzz", dir);
    await Deno.remove(`${broken}/tests/test.sh`);
    const cases: [unknown, RegExp][] = [
      [{ harbor: broken }, /^task\.harbor: .*fizzbuzz has no tests\/test\.sh$/],
      [{ harbor: `${dir}/nope` }, /^task\.harbor: .*\/nope does not exist$/],
      [{ harbor: "fixtures/harbor/fizzbuzz" }, /^task\.harbor: expected an absolute path/],
      [{ harbor: broken, repo: "/srv/repo" }, /^task\.base_commit: give repo and base_commit/],
    ];
    for (const [task, message] of cases) {
      const { status, body } = await post(gw, { task, patch: "" });
      assert.equal(status, 400, JSON.stringify(body));
      assert.equal(body.error.type, "invalid_request_error");
      assert.match(body.error.message, message);
    }
  } finally {
    await gw.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("GET /tasks lists the Harbor task folders under a folder, a broken one with its error", async () => {
  const gw = await startGateway();
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "rg-harbor-list-" }));
  try {
    const fixtures = await tasks(gw, `?dir=${encodeURIComponent(HARBOR_FIXTURES_DIR)}`);
    assert.equal(fixtures.status, 200, JSON.stringify(fixtures.body));
    assert.deepEqual(fixtures.body, {
      dir: HARBOR_FIXTURES_DIR,
      truncated: false,
      tasks: [
        FIZZBUZZ_FACTS,
        {
          name: "rollout-gateway/word-count",
          path: harborFixture("word_count"),
          description: "Count words separated by any whitespace.",
          difficulty: "easy",
          category: "programming",
          tags: ["node"],
          agent_timeout_sec: 90,
          verifier_timeout_sec: 30,
          docker_image: null,
          workdir: "/app",
        },
      ],
    });

    await copyFixture("word_count", dir, "b_words");
    const bad = await copyFixture("fizzbuzz", dir, "a_bad");
    await Deno.writeTextFile(`${bad}/task.toml`, "[agent]\ntimeout_sec = \n");
    await Deno.mkdir(`${dir}/.hidden`);
    await Deno.writeTextFile(`${dir}/notes.txt`, "not a task");
    const mixed = await tasks(gw, `?dir=${encodeURIComponent(dir)}`);
    assert.equal(mixed.status, 200);
    assert.deepEqual(mixed.body.tasks.map((task: { name: string }) => task.name), [
      "a_bad",
      "rollout-gateway/word-count",
    ]);
    assert.match(mixed.body.tasks[0].error, /task\.toml is not valid TOML at line 2/);
  } finally {
    await gw.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("GET /tasks needs the admin token, an absolute dir, and a dir that exists", async () => {
  const gw = await startGateway();
  try {
    const query = `?dir=${encodeURIComponent(HARBOR_FIXTURES_DIR)}`;
    assert.equal((await tasks(gw, query, {})).status, 401);
    assert.equal((await tasks(gw, query, { authorization: "Bearer wrong" })).status, 401);
    const cases: [string, number, string, RegExp][] = [
      ["", 400, "invalid_request_error", /^dir: field required/],
      ["?dir=fixtures/harbor", 400, "invalid_request_error", /^dir: expected an absolute path/],
      ["?dir=/no/such/folder", 404, "not_found_error", /Folder "\/no\/such\/folder" does not/],
      [
        `?dir=${encodeURIComponent(`${harborFixture("fizzbuzz")}/task.toml`)}`,
        400,
        "invalid_request_error",
        /is not a folder/,
      ],
    ];
    for (const [q, status, type, message] of cases) {
      const answer = await tasks(gw, q);
      assert.equal(answer.status, status, JSON.stringify(answer.body));
      assert.equal(answer.body.error.type, type);
      assert.match(answer.body.error.message, message);
    }
  } finally {
    await gw.close();
  }
});

Deno.test("POST /rollout solves a Harbor task folder with a stdlib agent: done, reward 1, the agent's budget from task.toml", async () => {
  const fix = await Deno.readTextFile(`${harborFixture("fizzbuzz")}/solution/solve.sh`);
  const gw = await startGateway({
    script: oneCommand(fix, "Fixed.", undefined, (command) => toolCall("bash", { command })),
    worker: true,
  });
  try {
    const submitted = await submit(gw, {
      task: { harbor: harborFixture("fizzbuzz") },
      agent: await miniSweAgent(),
    });
    const view = await awaitJob(gw, submitted.jobs[0].id);
    assert.equal(view.phase, "done", JSON.stringify(view));
    assert.deepEqual(
      [view.result.reward.score, view.result.reward.verifier.file],
      [1, "reward.txt"],
      view.result.agent.log_tail,
    );
    assert.equal(view.result.patch, await harborGold("fizzbuzz"));
    // The instruction reached the model as the task's problem statement.
    const calls = gw.engine.calls.filter((call) => call.output && call.output.length > 0);
    assert.ok(gw.tokenizer.decode(calls[0].inputIds).includes("prints the FizzBuzz sequence"));
    // The group keeps the resolved task, and [agent] timeout_sec (120) set the agent's budget.
    const record = await getRolloutGroup(gw.kv, submitted.group_id);
    const settings = record!.settings as { budgets: { agent_ms: number } };
    assert.equal(settings.budgets.agent_ms, 120_000);
    const stored = await readRolloutTask<Record<string, unknown>>(gw.kv, record!);
    assert.equal(stored.harbor, undefined);
    assert.equal((stored.harbor_tests as unknown[]).length, 2);
    // Its work tree, environment/ as a repository, is kept with the group for any host to run.
    assert.equal(stored.repo, `tree:${record!.tree!.digest}`);
    assert.equal(record!.tree!.commit, stored.base_commit);
  } finally {
    await gw.close();
  }
});
