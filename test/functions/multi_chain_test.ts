/**
 * One session, several chains: sub-agents (by agent id, nested, in parallel, or found by their
 * dispatch), side requests, compactions and tools added mid-conversation each land where they
 * belong — no false forks, nothing dropped.
 */
import assert from "node:assert/strict";
import type { Script } from "../../lib/scripted_engine/mod.ts";
import { assertChainExact, callsOfSample } from "../_chain_exact.ts";
import { ADMIN_TOKEN, type SampleJson, startGateway, type TestGateway } from "../_gateway.ts";

const TOOLS = [
  { name: "Agent", input_schema: { type: "object" } },
  { name: "Bash", input_schema: { type: "object" } },
];
const call = (name: string, input: Record<string, unknown>) =>
  `<tool_call>\n${JSON.stringify({ name, arguments: input })}\n</tool_call>`;

/** Replies by what the prompt's last user turn asks, so concurrent chains get theirs. */
const script: Script = (_call, text) => {
  const prompt = text();
  const last = prompt.slice(prompt.lastIndexOf("<|im_start|>user"));
  if (last.includes("Do two things")) {
    return `${call("Agent", { prompt: "TASK-A: list files" })}\n${
      call("Agent", { prompt: "TASK-B: count lines" })
    }`;
  }
  if (last.includes("Delegate")) return call("Agent", { prompt: "TASK-A: list files" });
  // Sub-agents' generations take a while (40 ms a token), so the two overlap even when a loaded
  // machine starts the second a moment after the first.
  if (last.includes("TASK-A") || last.includes("TASK-B")) {
    return { text: call("Bash", { command: "ls" }), latencyMs: 40 };
  }
  if (last.includes("<tool_response>\nfiles")) {
    return { text: "Sub-agent report: done.", latencyMs: 40 };
  }
  return "All done.";
};

interface Conversation {
  messages: { role: string; content: unknown }[];
  agent?: string;
  parent?: string;
  system?: string;
  model?: string;
  tools?: unknown[];
}

/** Sends the conversation; appends the reply to it; returns the reply. */
async function turn(gw: TestGateway, token: string, c: Conversation) {
  const headers: Record<string, string> = { "x-api-key": token };
  if (c.agent) headers["x-claude-code-agent-id"] = c.agent;
  if (c.parent) headers["x-claude-code-parent-agent-id"] = c.parent;
  const response = await gw.fetch("/v1/messages", {
    method: "POST",
    headers,
    body: JSON.stringify({
      model: c.model ?? "qwen3",
      max_tokens: 256,
      system: c.system ?? "You are the main agent.",
      tools: c.tools ?? TOOLS,
      messages: c.messages,
    }),
  });
  assert.equal(response.status, 200, await response.clone().text());
  const reply = await response.json();
  c.messages.push({ role: "assistant", content: reply.content });
  return reply as { content: { type: string; id?: string; input?: Record<string, unknown> }[] };
}

function answer(c: Conversation, reply: { content: { id?: string }[] }, results: string[]) {
  const ids = reply.content.flatMap((block) => block.id ? [block.id] : []);
  c.messages.push({
    role: "user",
    content: ids.map((id, i) => ({ type: "tool_result", tool_use_id: id, content: results[i] })),
  });
}

async function samples(
  gw: TestGateway,
  id: string,
  query = "",
): Promise<(SampleJson & Record<string, unknown>)[]> {
  const response = await gw.fetch(`/sessions/${id}/samples${query}`, {
    headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
  });
  return (await response.json()).samples;
}

/** Every segment is exact against the engine calls that built it, and the calls are all used. */
function assertSegmentsExact(gw: TestGateway, segments: SampleJson[]) {
  const used = new Set<string>();
  for (const segment of segments) {
    const calls = callsOfSample(gw.engine.calls, segment).filter((c) => c.output?.length);
    assertChainExact(calls, [{ ...segment, kind: "final" }], segment.chain_id);
    for (const c of calls) used.add(c.rid);
  }
  return used;
}

Deno.test("a sub-agent named by its agent id gets its own chain, dispatched by the main chain's Agent call", async () => {
  const gw = await startGateway({ script });
  try {
    const { id, token } = await gw.openSession();
    const main: Conversation = { messages: [{ role: "user", content: "Delegate the listing." }] };
    const dispatch = await turn(gw, token, main);
    const sub: Conversation = {
      agent: "agent-1",
      system: "You are a sub-agent.",
      messages: [{ role: "user", content: "TASK-A: list files" }],
    };
    answer(sub, await turn(gw, token, sub), ["files: a b"]);
    const report = await turn(gw, token, sub);
    answer(main, dispatch, [report.content.map((b) => (b as { text?: string }).text).join("")]);
    await turn(gw, token, main);

    const segments = await samples(gw, id);
    assert.deepEqual(segments.map((s) => [s.chain_id, s.kind]), [["c0", "final"], [
      "c1",
      "subagent",
    ]]);
    assert.deepEqual(segments[1].lineage, {
      parent: "c0",
      dispatch: dispatch.content[0].id,
      agent_id: "agent-1",
    });
    assert.equal(assertSegmentsExact(gw, segments).size, gw.engine.calls.length);
    const view = await gw.session(id);
    assert.deepEqual(
      view.chains.map((c: { id: string; children: string[] }) => [c.id, c.children]),
      [["c0", ["c1"]], ["c1", []]],
    );
  } finally {
    await gw.close();
  }
});

Deno.test("two sub-agents dispatched in one message generate in parallel, each on its exact chain", async () => {
  const gw = await startGateway({ script });
  try {
    const { id, token } = await gw.openSession();
    const main: Conversation = { messages: [{ role: "user", content: "Do two things at once." }] };
    const dispatch = await turn(gw, token, main);
    const [idA, idB] = dispatch.content.map((b) => b.id!);
    const run = async (agent: string, task: string) => {
      const sub: Conversation = {
        agent,
        system: "You are a sub-agent.",
        messages: [{ role: "user", content: task }],
      };
      answer(sub, await turn(gw, token, sub), ["files: a b"]);
      return await turn(gw, token, sub);
    };
    await Promise.all([
      run("agent-b", "TASK-B: count lines"),
      run("agent-a", "TASK-A: list files"),
    ]);
    answer(main, dispatch, ["A done", "B done"]);
    await turn(gw, token, main);

    const calls = gw.engine.calls;
    const overlap = calls.some((x) =>
      calls.some((y) => x !== y && x.receivedAt < y.finishedAt! && y.receivedAt < x.finishedAt!)
    );
    assert.ok(overlap, "two generations ran at the same time");
    const segments = await samples(gw, id);
    assert.deepEqual(segments.map((s) => s.kind).sort(), ["final", "subagent", "subagent"]);
    const byAgent = Object.fromEntries(
      segments.filter((s) => s.kind === "subagent").map((s) => [
        (s.lineage as { agent_id: string }).agent_id,
        (s.lineage as { dispatch: string }).dispatch,
      ]),
    );
    assert.deepEqual(byAgent, { "agent-a": idA, "agent-b": idB });
    assert.equal(assertSegmentsExact(gw, segments).size, calls.length);
  } finally {
    await gw.close();
  }
});

Deno.test("a nested sub-agent's parent is the sub-agent that dispatched it", async () => {
  const nested: Script = (c, text) =>
    text().includes("TASK-A") && !text().includes("TASK-C")
      ? call("Agent", { prompt: "TASK-C: deeper" })
      : script(c, text);
  const gw = await startGateway({ script: nested });
  try {
    const { id, token } = await gw.openSession();
    const main: Conversation = { messages: [{ role: "user", content: "Delegate the listing." }] };
    await turn(gw, token, main);
    const sub: Conversation = {
      agent: "a1",
      system: "Sub.",
      messages: [{ role: "user", content: "TASK-A: list files" }],
    };
    const inner = await turn(gw, token, sub);
    const deeper: Conversation = {
      agent: "a2",
      parent: "a1",
      system: "Sub.",
      messages: [{ role: "user", content: "TASK-C: deeper" }],
    };
    await turn(gw, token, deeper);
    const segments = await samples(gw, id);
    assert.deepEqual(
      segments.map((s) => [s.chain_id, s.kind, (s.lineage as { parent: string }).parent]),
      [
        ["c0", "final", null],
        ["c1", "subagent", "c0"],
        ["c2", "subagent", "c1"],
      ],
    );
    assert.equal((segments[2].lineage as { dispatch: string }).dispatch, inner.content[0].id);
  } finally {
    await gw.close();
  }
});

Deno.test("without agent ids, a sub-agent is found by its dispatch, and ambiguity stays on the main chain", async () => {
  const gw = await startGateway({ script });
  try {
    const { id, token } = await gw.openSession();
    const main: Conversation = { messages: [{ role: "user", content: "Delegate the listing." }] };
    const dispatch = await turn(gw, token, main);
    const sub: Conversation = {
      system: "You are a sub-agent.",
      messages: [{ role: "user", content: "TASK-A: list files" }],
    };
    answer(sub, await turn(gw, token, sub), ["files: a b"]);
    await turn(gw, token, sub); // extends the header-less sub-agent chain
    // Another system prompt with nothing dispatched: not a sub-agent — a new main conversation.
    await turn(gw, token, {
      system: "Someone else.",
      messages: [{ role: "user", content: "Hello?" }],
    });
    const segments = await samples(gw, id);
    assert.deepEqual(segments.map((s) => [s.chain_id, s.kind]), [
      ["c0", "wipe"],
      ["c1", "subagent"],
      ["c2", "final"],
    ]);
    assert.equal((segments[1].lineage as { dispatch: string }).dispatch, dispatch.content[0].id);
    assert.equal(segments[1].turns.length, 2);
  } finally {
    await gw.close();
  }
});

Deno.test("side requests get side chains, recorded but not trained unless asked", async () => {
  const gw = await startGateway({ script });
  try {
    const { id, token } = await gw.openSession();
    const main: Conversation = { messages: [{ role: "user", content: "Start." }] };
    await turn(gw, token, main);
    await turn(gw, token, {
      model: "haiku",
      tools: [],
      system: "Summarize.",
      messages: [{ role: "user", content: "Page text." }],
    });
    await turn(gw, token, {
      tools: [],
      system: "Title this.",
      messages: [{ role: "user", content: "Start." }],
    });
    main.messages.push({ role: "user", content: "Go on." });
    await turn(gw, token, main);
    const trained = await samples(gw, id);
    assert.deepEqual(trained.map((s) => [s.chain_id, s.kind, s.turns.length]), [[
      "c0",
      "final",
      2,
    ]]);
    const all = await samples(gw, id, "?include_side=true");
    assert.deepEqual(all.map((s) => [s.chain_id, s.kind]), [["c0", "final"], ["c1", "side"], [
      "c2",
      "side",
    ]]);
    assertSegmentsExact(gw, all);
  } finally {
    await gw.close();
  }
});

Deno.test("a compaction's summary request extends the chain; the restart from the summary wipes it", async () => {
  const gw = await startGateway({ script });
  try {
    const { id, token } = await gw.openSession();
    const main: Conversation = { messages: [{ role: "user", content: "Start." }] };
    await turn(gw, token, main);
    main.messages.push({ role: "user", content: "Summarize the conversation so far." });
    const summary = await turn(gw, token, main);
    const restarted: Conversation = {
      messages: [{
        role: "user",
        content: `This session is being continued. ${JSON.stringify(summary.content)}`,
      }],
    };
    await turn(gw, token, restarted);
    const segments = await samples(gw, id);
    assert.deepEqual(segments.map((s) => [s.chain_id, s.kind, s.turns.length]), [
      ["c0", "wipe", 2],
      ["c1", "final", 1],
    ]);
    assert.equal((segments[1].lineage as { parent: string }).parent, "c0");
    assertSegmentsExact(gw, segments);
  } finally {
    await gw.close();
  }
});

Deno.test("tools offered mid-conversation extend the chain with their definitions, not a new chain", async () => {
  const gw = await startGateway({ script });
  try {
    const { id, token } = await gw.openSession();
    const main: Conversation = {
      messages: [{ role: "user", content: "Start." }],
      tools: [TOOLS[1]],
    };
    await turn(gw, token, main);
    main.messages.push({ role: "user", content: "Go on." });
    main.tools = [...TOOLS, {
      name: "WebFetch",
      input_schema: { type: "object", properties: { url: { type: "string" } } },
    }];
    await turn(gw, token, main);
    const segments = await samples(gw, id);
    assert.deepEqual(segments.map((s) => [s.chain_id, s.kind, s.turns.length]), [[
      "c0",
      "final",
      2,
    ]]);
    const [first, second] = gw.engine.calls;
    const delta = gw.tokenizer.decode(
      second.inputIds.slice(first.inputIds.length + first.output!.length),
    );
    assert.match(delta, /available from now on[^]*"name":"Agent"[^]*"name":"WebFetch"/);
    assert.doesNotMatch(delta, /"name":"Bash"/, "tools shown before are not repeated");
    assertSegmentsExact(gw, segments);
  } finally {
    await gw.close();
  }
});
