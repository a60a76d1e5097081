/**
 * A gateway holding recorded work for the viewer's tests: a rollout group of two graded samples
 * (the mini-swe-agent's fix and its half fix: one passes, one fails a test by name), the recorded Claude Code episode
 * with two parallel sub-agents, one with a compaction (a wipe), and a session made to show
 * every turn flag (ill-formed tool call, truncation, replay, rewind).
 *
 * @module
 */
import assert from "node:assert/strict";
import { fixtureTask } from "./evaluate/_tasks.ts";
import { readScenario, replayScenario } from "./_claude_scenario.ts";
import { ADMIN_HEADERS, startGateway, type TestGateway } from "./_gateway.ts";
import type { Script } from "../lib/scripted_engine/mod.ts";
import {
  awaitJob,
  FIX_CALC,
  HALF_FIX_CALC,
  miniSweAgent,
  oneCommand,
  submit,
  toolCall,
} from "./rollout/_rollout.ts";

/** What the seeded gateway holds. */
export interface Seeded {
  readonly gw: TestGateway;
  readonly groupId: string;
  readonly jobIds: string[];
  /** The session of the job whose patch passed (score 1), and of the one that failed (0). */
  readonly passed: string;
  readonly failed: string;
  /** The parallel sub-agents episode: main, two sub-agents (and side requests). */
  readonly parallel: string;
  /** The compaction episode: a wiped conversation and its successor. */
  readonly compaction: string;
  /** The session with every flag. */
  readonly flagged: string;
}

/** Text the flagged session's second turn samples: a tool call that is not JSON. */
const ILL_FORMED = '<tool_call>\n{"name": "Bash", "arguments": {"command": "ls"\n</tool_call>';

async function messages(gw: TestGateway, token: string, body: unknown): Promise<Response> {
  return await fetch(`${gw.url}/v1/messages`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
}

/** Starts a gateway and records everything above into it. */
export async function seedGateway(): Promise<Seeded> {
  // The first conversation fixes the bug, the next fixes half of it: one sample passes, one
  // fails a test by name.
  let conversations = 0;
  const agent: Script = (call, promptText) => {
    const opening = !promptText().includes("<tool_response>");
    const fix = opening && conversations++ % 2 === 0 ? FIX_CALC : HALF_FIX_CALC;
    return oneCommand(fix, "Fixed.", undefined, (command) => toolCall("bash", { command }))(
      call,
      promptText,
    );
  };
  const gw = await startGateway({ script: agent, worker: true });
  try {
    const { task } = await fixtureTask("python_unittest");
    const submitted = await submit(gw, { task, agent: await miniSweAgent(), n: 2 });
    const jobIds = submitted.jobs.map((job) => job.id);
    const graded = new Map<number, string>(); // score → the job's session
    for (const id of jobIds) {
      const view = await awaitJob(gw, id);
      assert.equal(view.phase, "done", JSON.stringify(view));
      graded.set(view.result.reward.score, view.session_id);
    }
    assert.deepEqual([...graded.keys()].sort(), [0, 1], "one job passes, one fails");

    const parallel = await gw.openSession({ scenario: "parallel" });
    await replayScenario(gw, parallel.token, await readScenario("parallel"));
    const compaction = await gw.openSession({ scenario: "compaction" });
    await replayScenario(gw, compaction.token, await readScenario("compaction"));

    const flagged = await seedFlagged(gw);
    await fetch(`${gw.url}/sessions/${parallel.id}/reward`, {
      method: "POST",
      headers: ADMIN_HEADERS,
      body: JSON.stringify({ score: 0.75 }),
    }).then((r) => r.body?.cancel());
    return {
      gw,
      groupId: submitted.group_id,
      jobIds,
      passed: graded.get(1)!,
      failed: graded.get(0)!,
      parallel: parallel.id,
      compaction: compaction.id,
      flagged,
    };
  } catch (error) {
    await gw.close();
    throw error;
  }
}

/**
 * One chain showing every flag: a plain answer, an ill-formed tool call, a reply cut at
 * `max_tokens` (truncated), the first request again (a replay), a request back at the second
 * turn's boundary (a rewind: the truncated turn leaves the chain), and another truncated reply.
 * Live at the end: turn 0 (replayed), 1 (ill-formed), 2 (the rewind), 3 (truncated).
 */
async function seedFlagged(gw: TestGateway): Promise<string> {
  const { id, token } = await gw.openSession({ scenario: "flags" });
  const replies = [
    "Hello there.",
    ILL_FORMED,
    "A long answer that will be cut short by max_tokens",
    "Another answer.",
    "And this one is cut short as well",
  ];
  let next = 0;
  gw.engine.setScript(() => replies[next++] ?? "(none)");
  const base = { model: "qwen3", max_tokens: 256 };
  const user = (content: string) => ({ role: "user", content });
  const assistant = (reply: { content: unknown }) => ({
    role: "assistant",
    content: reply.content,
  });
  const send = async (body: unknown) => {
    const response = await messages(gw, token, body);
    const json = await response.json();
    assert.equal(response.status, 200, JSON.stringify(json));
    return json;
  };
  const first = { ...base, messages: [user("Hi")] };
  const reply1 = await send(first);
  const second = { ...base, messages: [...first.messages, assistant(reply1), user("List files")] };
  const reply2 = await send(second);
  const third = {
    ...base,
    max_tokens: 4,
    messages: [...second.messages, assistant(reply2), user("Explain at length")],
  };
  assert.equal((await send(third)).stop_reason, "max_tokens");
  // The first request again, byte for byte: answered from the record.
  assert.deepEqual((await send(first)).content, reply1.content);
  const rewind = { ...base, messages: [...second.messages, assistant(reply2), user("Instead")] };
  const reply4 = await send(rewind);
  const last = {
    ...base,
    max_tokens: 4,
    messages: [...rewind.messages, assistant(reply4), user("Once more, at length")],
  };
  assert.equal((await send(last)).stop_reason, "max_tokens");
  return id;
}
