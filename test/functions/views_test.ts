/**
 * The admin API's JSON views (`functions/_views.ts`): `lib`'s camelCase summaries become the
 * documented snake_case shapes, field for field and in the documented order, times as ISO 8601;
 * every route showing a session shows the same JSON of it.
 */
import assert from "node:assert/strict";
import { buildDeps } from "../../functions/_deps.ts";
import { createSessionsApp } from "../../functions/sessions.ts";
import { jobJson, sessionJson, sessionPageJson, taskListJson } from "../../functions/_views.ts";
import { anthropicTurnInput } from "../../lib/anthropic/mod.ts";
import { resolveConfig } from "../../lib/config/mod.ts";
import type { JobSummary } from "../../lib/rollout/mod.ts";
import { openSession, type SessionSummary, startTurn } from "../../lib/session/mod.ts";

const ADMIN_TOKEN = "views-test-admin-token";
const T0 = Date.UTC(2025, 0, 2, 3, 4, 5, 6);
const AT = (ms: number) => new Date(T0 + ms).toISOString();

const SESSION: SessionSummary = {
  id: "s1",
  status: "closed",
  createdAt: T0,
  closedAt: T0 + 1000,
  closedAs: "aborted",
  expiresAt: T0 + 2000,
  metadata: { task: "demo" },
  recordMessages: true,
  reward: { score: 0.5, note: "kept as sent" },
  chains: [{
    id: "c0",
    kind: "wipe",
    role: "main",
    parent: null,
    dispatch: null,
    agentId: null,
    children: ["c1"],
    model: "m",
    turns: 2,
    tokens: 30,
    createdAt: T0 + 10,
    wipedAt: T0 + 20,
  }, {
    id: "c1",
    kind: "subagent",
    role: "subagent",
    parent: "c0",
    dispatch: "toolu_1",
    agentId: "agent-1",
    children: [],
    model: "m",
    turns: 1,
    tokens: 12,
    createdAt: T0 + 30,
    wipedAt: null,
  }],
};

Deno.test("sessionJson() writes a session and its chains in snake_case, in the API's order, times as ISO 8601", () => {
  const expected = {
    id: "s1",
    status: "closed",
    created_at: AT(0),
    closed_at: AT(1000),
    closed_as: "aborted",
    expires_at: AT(2000),
    metadata: { task: "demo" },
    record_messages: true,
    reward: { score: 0.5, note: "kept as sent" },
    chains: [{
      id: "c0",
      kind: "wipe",
      role: "main",
      parent: null,
      dispatch: null,
      agent_id: null,
      children: ["c1"],
      model: "m",
      turns: 2,
      tokens: 30,
      created_at: AT(10),
      wiped_at: AT(20),
    }, {
      id: "c1",
      kind: "subagent",
      role: "subagent",
      parent: "c0",
      dispatch: "toolu_1",
      agent_id: "agent-1",
      children: [],
      model: "m",
      turns: 1,
      tokens: 12,
      created_at: AT(30),
      wiped_at: null,
    }],
  };
  // Compared as text: the order of the fields is part of the wire.
  assert.equal(JSON.stringify(sessionJson(SESSION)), JSON.stringify(expected));
  const open = { ...SESSION, closedAt: null, closedAs: null, expiresAt: null, reward: null };
  assert.deepEqual(
    [sessionJson(open).closed_at, sessionJson(open).closed_as, sessionJson(open).expires_at],
    [null, null, null],
  );
  assert.equal(
    JSON.stringify(sessionPageJson({ sessions: [SESSION], cursor: "abc" })),
    JSON.stringify({ sessions: [expected], next_cursor: "abc" }),
  );
});

Deno.test("jobJson() writes a job, its progress and its result in snake_case, in the API's order", () => {
  const job: JobSummary = {
    id: "job_1",
    groupId: "grp_1",
    index: 3,
    phase: "done",
    reason: null,
    outcome: "agent",
    detail: null,
    attempt: 2,
    maxAttempts: 2,
    sessionId: "job_1_a2",
    sessions: ["job_1_a1", "job_1_a2"],
    createdAt: T0,
    startedAt: T0 + 100,
    finishedAt: T0 + 900,
    deadlineAt: T0 + 5000,
    expiresAt: T0 + 9000,
    cancelRequested: false,
    progress: { turns: 4, tokens: 512, elapsedMs: 800 },
    result: {
      reward: { score: 1, status: "COMPLETED", steps: 2, turns: 4, info: {} },
      patch: "diff",
      agent: { exitCode: 0, timedOut: false, numTurns: 4, result: "success", logTail: "ok\n" },
    },
  };
  const expected = {
    id: "job_1",
    group_id: "grp_1",
    index: 3,
    phase: "done",
    reason: null,
    outcome: "agent",
    detail: null,
    attempt: 2,
    max_attempts: 2,
    session_id: "job_1_a2",
    sessions: ["job_1_a1", "job_1_a2"],
    created_at: AT(0),
    started_at: AT(100),
    finished_at: AT(900),
    deadline_at: AT(5000),
    expires_at: AT(9000),
    cancel_requested: false,
    progress: { turns: 4, tokens: 512, elapsed_ms: 800 },
    result: {
      reward: { score: 1, status: "COMPLETED", steps: 2, turns: 4, info: {} },
      patch: "diff",
      agent: { exit_code: 0, timed_out: false, num_turns: 4, result: "success", log_tail: "ok\n" },
    },
  };
  assert.equal(JSON.stringify(jobJson(job)), JSON.stringify(expected));
  const queued: JobSummary = {
    ...job,
    phase: "queued",
    startedAt: null,
    finishedAt: null,
    deadlineAt: null,
    expiresAt: null,
    result: null,
  };
  const json = jobJson(queued);
  assert.deepEqual(
    [json.started_at, json.finished_at, json.deadline_at, json.expires_at, json.result],
    [null, null, null, null, null],
  );
  const noAgent = jobJson({ ...job, result: { reward: null, patch: "diff", agent: null } });
  assert.deepEqual(noAgent.result, { reward: null, patch: "diff", agent: null });
});

Deno.test("taskListJson() writes a task folder's facts in snake_case and a problem as it is", () => {
  const facts = {
    name: "t",
    path: "/tasks/t",
    description: null,
    difficulty: "easy",
    category: null,
    tags: ["x"],
    agentTimeoutSec: 90,
    verifierTimeoutSec: 30,
    dockerImage: null,
    workdir: "/app",
  };
  const problem = { name: "u", path: "/tasks/u", error: "no task.toml" };
  assert.equal(
    JSON.stringify(taskListJson({ dir: "/tasks", tasks: [facts, problem], truncated: true })),
    JSON.stringify({
      dir: "/tasks",
      tasks: [{
        name: "t",
        path: "/tasks/t",
        description: null,
        difficulty: "easy",
        category: null,
        tags: ["x"],
        agent_timeout_sec: 90,
        verifier_timeout_sec: 30,
        docker_image: null,
        workdir: "/app",
      }, problem],
      truncated: true,
    }),
  );
});

Deno.test("GET /sessions/:id, the listing, the close answer and the raw export show one JSON of the session", async () => {
  const deps = await buildDeps(resolveConfig({ KV_PATH: ":memory:", ADMIN_TOKEN }));
  try {
    const app = createSessionsApp(deps);
    const call = async (path: string, method = "GET") => {
      const response = await app.request(path, {
        method,
        headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      });
      assert.equal(response.status, 200, path);
      return await response.text();
    };
    const { session: { id } } = await openSession(deps.kv, { metadata: { task: "demo" } });
    const messages = [{ role: "user" as const, content: "hi" }];
    const input = anthropicTurnInput(
      { model: "m", max_tokens: 64, messages },
      { sessionId: id, signingSecret: "secret" },
    );
    await (await startTurn(deps, input)).completion;

    const shown = await call(`/sessions/${id}`);
    const session = JSON.parse(shown);
    assert.deepEqual(Object.keys(session), [
      "id",
      "status",
      "created_at",
      "closed_at",
      "closed_as",
      "expires_at",
      "metadata",
      "record_messages",
      "reward",
      "chains",
    ]);
    assert.deepEqual(
      session.chains.map((chain: Record<string, unknown>) => [chain.kind, chain.turns]),
      [["final", 1]],
    );
    const listed = JSON.parse(await call("/sessions"));
    assert.deepEqual(Object.keys(listed), ["sessions", "next_cursor"]);
    assert.equal(JSON.stringify(listed.sessions), `[${shown}]`);
    const raw = await call(`/sessions/${id}/samples?format=raw`);
    assert.ok(raw.startsWith(`{"session":${shown},"chains":[`), raw.slice(0, 200));

    const closed = await call(`/sessions/${id}/close`, "POST");
    assert.equal(closed, await call(`/sessions/${id}`));
    const { status, closed_as } = JSON.parse(closed);
    assert.deepEqual([status, closed_as], ["closed", "completed"]);
  } finally {
    await deps.close();
  }
});
