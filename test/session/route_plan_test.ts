/**
 * The routing policy as a table (docs/DESIGN.md §4.3): each row is a conversation pattern from
 * the peers' test suites (slime's trajectory-manager matrix, uni-agent's multi-chain tests),
 * rephrased for `/v1/messages`, with the plan of every request and the segments it leaves. A
 * segment reads `chain kind: [rendered, mask 0] sampled [rendered] sampled…`. Every row runs
 * twice: in the process that recorded the chain (its cache warm) and in another (cold).
 */
import assert from "node:assert/strict";
import type { MessageParam } from "../../lib/anthropic/mod.ts";
import type { RoutePolicy } from "../../lib/session/mod.ts";
import { type Reply, RouteSim, type Step } from "./_route_sim.ts";

const user = (text: string): MessageParam => ({ role: "user", content: text });
const result = (id: string, text: string): MessageParam => ({
  role: "user",
  content: [{ type: "tool_result", tool_use_id: id, content: text }],
});
const said = (
  text: string,
  options: { thinking?: string; calls?: [string, string, Record<string, unknown>][] } = {},
): MessageParam => ({
  role: "assistant",
  content: [
    ...(options.thinking
      ? [{ type: "thinking" as const, thinking: options.thinking, signature: "sig" }]
      : []),
    { type: "text" as const, text },
    ...(options.calls ?? []).map(([id, name, input]) => ({
      type: "tool_use" as const,
      id,
      name,
      input,
    })),
  ],
});
const sampled = (message: MessageParam, tokens = 20): Reply => ({ message, tokens });

/** What the model sampled, by label (echoes of them are messages below). */
const REPLIES: Record<string, Reply> = {
  A1: sampled(
    said("Listing.", {
      thinking: "Look first.",
      calls: [["t1", "Bash", { cmd: "ls", all: true }]],
    }),
  ),
  A2: sampled(
    said("Reading.", { thinking: "Now read.", calls: [["t2", "Bash", { cmd: "cat a" }]] }),
  ),
  A3: sampled(said("Fixed it.", { thinking: "Done." })),
  A4: sampled(said("Tested.")),
  B2: sampled(said("Other path.", { calls: [["t9", "Bash", { cmd: "pwd" }]] })),
  L1: sampled(said("A long answer.", { thinking: "Much thought." }), 5000),
  D1: sampled(said("Delegating.", { calls: [["d1", "Agent", { prompt: "TASK-A: list files" }]] })),
  S1: sampled(said("Sub-agent listing.", { calls: [["s1", "Bash", { cmd: "ls" }]] })),
  S2: sampled(said("Sub-agent report: a b.")),
  H1: sampled(said("Helper verdict: safe.")),
  H2: sampled(said("Helper verdict: still safe.")),
  T1: sampled(said("Fix login bug")),
  M1: sampled(
    said("Reading the memory index.", { calls: [["m1", "Read", { path: "MEMORY.md" }]] }),
  ),
  M2: sampled(said("Nothing worth remembering.")),
  Q1: sampled(
    said("Delegating.", { calls: [["q1", "agent", { prompt: "TASK-A: list files" }]] }),
  ),
};

/** The client's messages, and the echoes it sends of replies (rewritten as clients do). */
const MESSAGES: Record<string, MessageParam> = {
  u1: user("Fix the bug."),
  "u1'": user("Fix the bug, please."),
  u2: user("Now add a test."),
  u3: user("Start over: summary of earlier work."),
  x1: said("I am an assistant message the model never sampled."),
  r1: result("t1", "a.txt b.txt"),
  r2: result("t2", "contents"),
  r9: result("t9", "/repo"),
  rs1: result("s1", "a b"),
  rd1: result("d1", "Sub-agent report: a b."),
  rq1: result("q1", "Sub-agent report: a b."),
  rm1: result("m1", "(empty)"),
  mem: user("Update durable memory from the conversation above."),
  task: user("TASK-A: list files"),
  h1: user("Is this command safe? ls"),
  h2: user("Is this command safe? cat"),
  title: user("Write a title for: Fix the bug."),
  // Echoes of A1 as clients rewrite them.
  "A1/keys": said("Listing.", {
    thinking: "Look first.",
    calls: [["t1", "Bash", { all: true, cmd: "ls" }]],
  }),
  "A1/nothink": said("Listing.", { calls: [["t1", "Bash", { cmd: "ls", all: true }]] }),
  "A1/space": said("\n  Listing. \n", { calls: [["t1", "Bash", { cmd: "ls", all: true }]] }),
  "A1/blocks": {
    role: "assistant",
    content: [
      { type: "text", text: "" },
      { type: "text", text: "Listing." },
      { type: "tool_use", id: "t1", name: "Bash", input: { cmd: "ls", all: true } },
    ],
  },
  "A1/ids": said("Listing.", { calls: [["call_0", "Bash", { cmd: "ls", all: true }]] }),
  "r1/ids": result("call_0", "a.txt b.txt"),
  "A2/all": said(" Reading.", { calls: [["call_1", "Bash", { cmd: "cat a" }]] }),
  "r2/ids": result("call_1", "contents"),
  "A3/nothink": said("Fixed it."),
  // Echoes that say something else.
  "A2/edit": said("Reading the file carefully.", { calls: [["t2", "Bash", { cmd: "cat a" }]] }),
  "L1/edit": said("A short answer."),
  "A1/edit": said("Listed.", { calls: [["t1", "Bash", { cmd: "ls", all: true }]] }),
};

const KEEP: RoutePolicy = { realignMaxTokens: 256, thinkingHistory: "keep" };
const TEMPLATE: RoutePolicy = { ...KEEP, thinkingHistory: "template" };

interface Row {
  readonly name: string;
  readonly policy?: RoutePolicy;
  /** Each request, and the plan it must get: `kind chain`. */
  readonly steps: readonly (Step & { readonly expect: string })[];
  /** The segments left, in the order their chains started. */
  readonly segments: readonly string[];
}

const HELPER = { system: "You judge commands.", tools: [] as string[] };
const JUDGE = { system: "You judge commands.", tools: ["Read"] };
/** A memory extractor: its own system prompt and tools, the agent's history re-sent, its question. */
const EXTRACTOR = { system: "You extract durable memories.", tools: ["Read", "Write"] };
const SUB = { system: "You are a sub-agent." };

const MATRIX: readonly Row[] = [
  // In-chain.
  {
    name: "1. the first request starts the main chain",
    steps: [{ send: ["u1"], reply: "A1", expect: "start c0" }],
    segments: ["c0 final: [u1] A1"],
  },
  {
    name: "2. the reply echoed with a tool result appends",
    steps: [
      { send: ["u1"], reply: "A1", expect: "start c0" },
      { send: ["u1", "A1", "r1"], reply: "A2", expect: "append c0" },
      { send: ["u1", "A1", "r1", "A2", "r2"], reply: "A3", expect: "append c0" },
    ],
    segments: ["c0 final: [u1] A1 [r1] A2 [r2] A3"],
  },
  {
    name: "3. tool input echoed with its keys reordered appends",
    steps: [
      { send: ["u1"], reply: "A1", expect: "start c0" },
      { send: ["u1", "A1/keys", "r1"], reply: "A2", expect: "append c0" },
    ],
    segments: ["c0 final: [u1] A1 [r1] A2"],
  },
  // Rewritten echoes: the turn stays as sampled.
  {
    name: "4. the echo drops the reasoning: appends",
    steps: [
      { send: ["u1"], reply: "A1", expect: "start c0" },
      { send: ["u1", "A1/nothink", "r1"], reply: "A2", expect: "append c0" },
    ],
    segments: ["c0 final: [u1] A1 [r1] A2"],
  },
  {
    name: "5. the echo trims or adds whitespace at the edges: appends",
    steps: [
      { send: ["u1"], reply: "A1", expect: "start c0" },
      { send: ["u1", "A1/space", "r1"], reply: "A2", expect: "append c0" },
    ],
    segments: ["c0 final: [u1] A1 [r1] A2"],
  },
  {
    name: "6. the echo adds an empty text block (or drops one): appends",
    steps: [
      { send: ["u1"], reply: "A1", expect: "start c0" },
      { send: ["u1", "A1/blocks", "r1"], reply: "A2", expect: "append c0" },
    ],
    segments: ["c0 final: [u1] A1 [r1] A2"],
  },
  {
    name: "7. tool-call ids rewritten consistently in the call and its result: appends",
    steps: [
      { send: ["u1"], reply: "A1", expect: "start c0" },
      { send: ["u1", "A1/ids", "r1/ids"], reply: "A2", expect: "append c0" },
    ],
    segments: ["c0 final: [u1] A1 [r1/ids] A2"],
  },
  {
    name: "8. a client with every habit, on every turn, keeps one chain",
    steps: [
      { send: ["u1"], reply: "A1", expect: "start c0" },
      { send: ["u1", "A1/ids", "r1/ids"], reply: "A2", expect: "append c0" },
      { send: ["u1", "A1/ids", "r1/ids", "A2/all", "r2/ids"], reply: "A3", expect: "append c0" },
      {
        send: ["u1", "A1/ids", "r1/ids", "A2/all", "r2/ids", "A3/nothink", "u2"],
        reply: "A4",
        expect: "append c0",
      },
    ],
    segments: ["c0 final: [u1] A1 [r1/ids] A2 [r2/ids] A3 [u2] A4"],
  },
  // Retries.
  {
    name: "9. a retry of the last request is answered from its record",
    steps: [
      { send: ["u1"], reply: "A1", expect: "start c0" },
      { send: ["u1"], reply: "A1", expect: "replay c0" },
    ],
    segments: ["c0 final: [u1] A1"],
  },
  {
    name: "10. a retry of an earlier request after the chain moved on is answered from its record",
    steps: [
      { send: ["u1"], reply: "A1", expect: "start c0" },
      { send: ["u1", "A1", "r1"], reply: "A2", expect: "append c0" },
      { send: ["u1"], reply: "A1", expect: "replay c0" },
    ],
    segments: ["c0 final: [u1] A1 [r1] A2"],
  },
  {
    name: "11. the last request again with other settings regenerates it in place",
    steps: [
      { send: ["u1"], reply: "A1", expect: "start c0" },
      { send: ["u1", "A1", "r1"], reply: "A2", expect: "append c0" },
      { send: ["u1", "A1", "r1"], settings: "t=1.0", reply: "B2", expect: "rewind c0" },
    ],
    segments: ["c0 final: [u1] A1 [r1] B2"],
  },
  {
    name: "12. the last reply dropped and the user says something else: rewinds in place",
    steps: [
      { send: ["u1"], reply: "A1", expect: "start c0" },
      { send: ["u1", "A1", "r1"], reply: "A2", expect: "append c0" },
      { send: ["u1", "A1", "u2"], reply: "A3", expect: "rewind c0" },
    ],
    segments: ["c0 final: [u1] A1 [u2] A3"],
  },
  // Edits.
  {
    name: "13. an edited short reply realigns: the client's text is context, the turn leaves",
    steps: [
      { send: ["u1"], reply: "A1", expect: "start c0" },
      { send: ["u1", "A1", "r1"], reply: "A2", expect: "append c0" },
      { send: ["u1", "A1", "r1", "A2/edit", "r2"], reply: "A3", expect: "realign c0" },
    ],
    segments: ["c0 final: [u1] A1 [r1 A2/edit r2] A3"],
  },
  {
    name: "14. an edited first reply realigns to the start of the chain",
    steps: [
      { send: ["u1"], reply: "A1", expect: "start c0" },
      { send: ["u1", "A1/edit", "r1"], reply: "A2", expect: "realign c0" },
    ],
    segments: ["c0 final: [u1 A1/edit r1] A2"],
  },
  {
    name: "15. an edited reply past REALIGN_MAX_TOKENS starts a new chain; the old one stays",
    steps: [
      { send: ["u1"], reply: "L1", expect: "start c0" },
      { send: ["u1", "L1/edit", "u2"], reply: "A2", expect: "wipe c1" },
    ],
    segments: ["c0 wipe: [u1] L1", "c1 final: [u1 L1/edit u2] A2"],
  },
  {
    name: "16. an edited earlier user message starts a new chain",
    steps: [
      { send: ["u1"], reply: "A1", expect: "start c0" },
      { send: ["u1", "A1", "r1"], reply: "A2", expect: "append c0" },
      { send: ["u1'", "A1", "r1"], reply: "A3", expect: "wipe c1" },
    ],
    segments: ["c0 wipe: [u1] A1 [r1] A2", "c1 final: [u1' A1 r1] A3"],
  },
  {
    name: "17. an assistant message the model never sampled is context",
    steps: [
      { send: ["u1", "x1", "u2"], reply: "A1", expect: "start c0" },
      { send: ["u1", "x1", "u2", "A1", "r1"], reply: "A2", expect: "append c0" },
    ],
    segments: ["c0 final: [u1 x1 u2] A1 [r1] A2"],
  },
  // New chains.
  {
    name: "18. a named sub-agent gets its own chain, dispatched by the main chain's Agent call",
    steps: [
      { send: ["u1"], reply: "D1", expect: "start c0" },
      { send: ["task"], agent: "ag1", ...SUB, reply: "S1", expect: "subagent c1" },
      { send: ["task", "S1", "rs1"], agent: "ag1", ...SUB, reply: "S2", expect: "append c1" },
      { send: ["u1", "D1", "rd1"], reply: "A3", expect: "append c0" },
    ],
    segments: ["c0 final: [u1] D1 [rd1] A3", "c1 subagent: [task] S1 [rs1] S2"],
  },
  {
    name: "19. an unnamed sub-agent is found by its dispatch",
    steps: [
      { send: ["u1"], reply: "D1", expect: "start c0" },
      { send: ["task"], ...SUB, reply: "S1", expect: "subagent c1" },
      { send: ["task", "S1", "rs1"], ...SUB, reply: "S2", expect: "append c1" },
      { send: ["u1", "D1", "rd1"], reply: "A3", expect: "append c0" },
    ],
    segments: ["c0 final: [u1] D1 [rd1] A3", "c1 subagent: [task] S1 [rs1] S2"],
  },
  {
    name: "20. another model's request is a side chain; the main chain goes on",
    steps: [
      { send: ["u1"], reply: "A1", expect: "start c0" },
      { send: ["title"], model: "small", reply: "T1", expect: "side c1" },
      { send: ["u1", "A1", "r1"], reply: "A2", expect: "append c0" },
    ],
    segments: ["c0 final: [u1] A1 [r1] A2", "c1 side: [title] T1"],
  },
  {
    name: "21. a request with no tools where the main chain has some is a side chain",
    steps: [
      { send: ["u1"], reply: "A1", expect: "start c0" },
      { send: ["title"], tools: [], reply: "T1", expect: "side c1" },
      { send: ["u1", "A1", "r1"], reply: "A2", expect: "append c0" },
    ],
    segments: ["c0 final: [u1] A1 [r1] A2", "c1 side: [title] T1"],
  },
  {
    name: "22. a new conversation with the same system prompt (a compaction) wipes the old",
    steps: [
      { send: ["u1"], reply: "A1", expect: "start c0" },
      { send: ["u3"], reply: "A2", expect: "wipe c1" },
      { send: ["u3", "A2", "u2"], reply: "A3", expect: "append c1" },
    ],
    segments: ["c0 wipe: [u1] A1", "c1 final: [u3] A2 [u2] A3"],
  },
  // Interleaving.
  {
    name: "23. a helper with another system prompt and tools of its own is a side chain",
    steps: [
      { send: ["u1"], reply: "A1", expect: "start c0" },
      { send: ["h1"], ...JUDGE, reply: "H1", expect: "side c1" },
      { send: ["u1", "A1", "r1"], reply: "A2", expect: "append c0" },
      { send: ["u1", "A1", "r1", "A2", "r2"], reply: "A3", expect: "append c0" },
    ],
    segments: ["c0 final: [u1] A1 [r1] A2 [r2] A3", "c1 side: [h1] H1"],
  },
  {
    name: "24. conversations that keep interleaving each continue their own chain",
    steps: [
      { send: ["u1"], reply: "A1", expect: "start c0" },
      { send: ["h1"], ...JUDGE, reply: "H1", expect: "side c1" },
      { send: ["u1", "A1", "r1"], reply: "A2", expect: "append c0" },
      { send: ["h1", "H1", "h2"], ...JUDGE, reply: "H2", expect: "append c1" },
      { send: ["u1", "A1", "r1", "A2", "r2"], reply: "A3", expect: "append c0" },
    ],
    segments: ["c0 final: [u1] A1 [r1] A2 [r2] A3", "c1 side: [h1] H1 [h2] H2"],
  },
  {
    name: "25. a helper with no tools is a side chain that continues by its history",
    steps: [
      { send: ["u1"], reply: "A1", expect: "start c0" },
      { send: ["h1"], ...HELPER, reply: "H1", expect: "side c1" },
      { send: ["u1", "A1", "r1"], reply: "A2", expect: "append c0" },
      { send: ["h1", "H1", "h2"], ...HELPER, reply: "H2", expect: "append c1" },
    ],
    segments: ["c0 final: [u1] A1 [r1] A2", "c1 side: [h1] H1 [h2] H2"],
  },
  {
    name: "26. a compacted conversation that goes back to its pre-compaction history resumes it",
    steps: [
      { send: ["u1"], reply: "A1", expect: "start c0" },
      { send: ["u3"], reply: "A2", expect: "wipe c1" },
      { send: ["u1", "A1", "r1"], reply: "A3", expect: "resume c0" },
    ],
    segments: ["c0 final: [u1] A1 [r1] A3", "c1 wipe: [u3] A2"],
  },
  // Thinking history.
  {
    name: "27. THINKING_HISTORY=keep: a new user query appends; the reasoning stays as sampled",
    steps: [
      { send: ["u1"], reply: "A3", expect: "start c0" },
      { send: ["u1", "A3", "u2"], reply: "A4", expect: "append c0" },
    ],
    segments: ["c0 final: [u1] A3 [u2] A4"],
  },
  {
    name:
      "28. THINKING_HISTORY=template: a new user query after reasoning starts from the template",
    policy: TEMPLATE,
    steps: [
      { send: ["u1"], reply: "A1", expect: "start c0" },
      { send: ["u1", "A1", "r1"], reply: "A3", expect: "append c0" },
      { send: ["u1", "A1", "r1", "A3", "u2"], reply: "A4", expect: "wipe c1" },
      { send: ["u1", "A1", "r1", "A3", "u2", "A4", "u3"], reply: "T1", expect: "append c1" },
    ],
    segments: ["c0 wipe: [u1] A1 [r1] A3", "c1 final: [u1 A1 r1 A3 u2] A4 [u3] T1"],
  },
  // Helpers and the agent's own conversation.
  {
    name: "29. a trailing helper re-sending the agent's history leaves the agent's chain final",
    steps: [
      { send: ["u1"], reply: "A1", expect: "start c0" },
      { send: ["u1", "A1", "r1"], reply: "A3", expect: "append c0" },
      { send: ["u1", "A1", "r1", "A3", "mem"], ...EXTRACTOR, reply: "M1", expect: "side c1" },
      {
        send: ["u1", "A1", "r1", "A3", "mem", "M1", "rm1"],
        ...EXTRACTOR,
        reply: "M2",
        expect: "append c1",
      },
    ],
    segments: [
      "c0 final: [u1] A1 [r1] A3",
      "c1 side: [u1 A1 r1 A3 mem] M1 [rm1] M2",
    ],
  },
  {
    name: "30. a helper with the agent's system prompt and no tools never appends to its chain",
    steps: [
      { send: ["u1"], reply: "A1", expect: "start c0" },
      { send: ["u1", "A1", "r1"], reply: "A3", expect: "append c0" },
      { send: ["u1", "A1", "r1", "A3", "title"], tools: [], reply: "T1", expect: "side c1" },
    ],
    segments: ["c0 final: [u1] A1 [r1] A3", "c1 side: [u1 A1 r1 A3 title] T1"],
  },
  {
    name: "31. the agent's history under a changed system prompt and the same tools is its own",
    steps: [
      { send: ["u1"], reply: "A1", expect: "start c0" },
      {
        send: ["u1", "A1", "r1"],
        system: "You are the main agent (memory: none).",
        reply: "A2",
        expect: "wipe c1",
      },
    ],
    segments: ["c0 wipe: [u1] A1", "c1 final: [u1 A1 r1] A2"],
  },
  {
    name: "32. a helper with no tools that came first yields to the agent's conversation",
    steps: [
      { send: ["title"], ...HELPER, reply: "T1", expect: "start c0" },
      { send: ["u1"], reply: "A1", expect: "start c1" },
      { send: ["u1", "A1", "r1"], reply: "A2", expect: "append c1" },
      { send: ["h1"], ...HELPER, reply: "H1", expect: "side c2" },
    ],
    segments: ["c0 side: [title] T1", "c1 final: [u1] A1 [r1] A2", "c2 side: [h1] H1"],
  },
  {
    name: "33. Qwen Code's agent tool dispatches a sub-agent; the parent resumes in place",
    steps: [
      { send: ["u1"], reply: "Q1", expect: "start c0" },
      { send: ["task"], ...SUB, reply: "S1", expect: "subagent c1" },
      { send: ["task", "S1", "rs1"], ...SUB, reply: "S2", expect: "append c1" },
      { send: ["u1", "Q1", "rq1"], reply: "A3", expect: "append c0" },
    ],
    segments: ["c0 final: [u1] Q1 [rq1] A3", "c1 subagent: [task] S1 [rs1] S2"],
  },
  {
    name: "34. tools renamed or removed keep the chain: the delta's note says which went",
    steps: [
      { send: ["u1"], reply: "A1", expect: "start c0" },
      { send: ["u1", "A1", "r1"], tools: ["Shell", "Agent"], reply: "A2", expect: "append c0" },
      { send: ["u1", "A1", "r1", "A2", "r2"], tools: ["Shell"], reply: "A3", expect: "append c0" },
    ],
    segments: ["c0 final: [u1] A1 [r1] A2 [r2] A3"],
  },
];

for (const row of MATRIX) {
  for (const cold of [false, true]) {
    Deno.test(`route matrix ${row.name}${cold ? " (another process)" : ""}`, () => {
      const sim = new RouteSim(MESSAGES, REPLIES, row.policy ?? KEEP, cold);
      const plans = row.steps.map((step) => {
        const { kind, chain } = sim.send(step);
        return `${kind} ${chain}`;
      });
      assert.deepEqual(plans, row.steps.map((step) => step.expect));
      assert.deepEqual(sim.segments(), row.segments);
    });
  }
}
