/**
 * `deno task bench`: the prefix tree (`format=tree`) of a group of eight Claude-Code-sized
 * episodes of one task — the real CLI's system prompt and tools (fixtures/claude_code/
 * subagent.json) and its task, then tool turns whose outputs differ per episode — against the
 * scripted engine in its own process.
 *
 * - **Tokens**: in the tree against in the flat export. Goal: the shared prefix counted once (the
 *   saving at least seven times it).
 * - **Time**: a group page's export as a tree against the same page flat, each serialized as the
 *   route answers it (median of runs, the same function the route calls).
 *
 * `BENCH_FAST=1` (see `_harness.ts`): four turns an episode, three runs.
 *
 * @module
 */
import type { MessageParam } from "../lib/anthropic/mod.ts";
import { readScenario } from "../test/_claude_scenario.ts";
import { exportGroupSamples, GroupPage, SamplesQuery } from "../functions/_samples.ts";
import { ADMIN, answer, filler, median, setting, startBenchGateway, TOOLS } from "./_harness.ts";

const EPISODES = 8;
const TURNS = Number(setting("BENCH_TREE_TURNS", 16, 4));
const RUNS = Number(setting("BENCH_TREE_RUNS", 9, 3));

const gw = await startBenchGateway();
const recorded = (await readScenario("subagent")).requests[0].body;
// The CLI's request, its tools and Bash (the scripted model's call) both offered.
const cliTools = (recorded.tools ?? []) as { name: string }[];
const base = {
  ...recorded,
  stream: false,
  tools: [...cliTools, ...TOOLS.filter((tool) => !cliTools.some((t) => t.name === tool.name))],
};

console.log(
  `Rollout Gateway prefix-tree bench — a group of ${EPISODES} Claude Code episodes of one task, ${TURNS} turns each`,
);

const sessions: string[] = [];
for (let e = 0; e < EPISODES; e++) {
  const session = await gw.call("/sessions", ADMIN, {});
  const messages = [structuredClone(recorded.messages[0])] as MessageParam[];
  let reply = await gw.call("/v1/messages", session.token, { ...base, messages });
  for (let t = 1; t < TURNS; t++) {
    answer(messages, reply, filler(20 + ((e * 7 + t) % 30), e * 1000 + t));
    reply = await gw.call("/v1/messages", session.token, { ...base, messages });
  }
  sessions.push(session.id);
}

const jobs = sessions.map((sessionId, i) => ({
  id: `job_${i}`,
  phase: "done",
  ended: true,
  sessionId,
}));
const page = GroupPage.parse({ limit: String(EPISODES) });
const time = async (format: string) => {
  const query = SamplesQuery.parse({ format });
  const ms: number[] = [];
  let bytes = 0;
  // deno-lint-ignore no-explicit-any
  let answerOf: any = null;
  for (let run = 0; run < RUNS; run++) {
    const started = performance.now();
    answerOf = await exportGroupSamples(gw.deps, jobs, query, page);
    bytes = JSON.stringify(answerOf).length;
    ms.push(performance.now() - started);
  }
  return { ms: median(ms), bytes, answer: answerOf };
};
const flat = await time("samples");
const tree = await time("tree");
const samples = flat.answer.samples as { prompt_ids: number[]; response_ids: number[] }[];
// The prefix every episode starts with: the CLI's system prompt, tools, the task and the first
// sampled reply (the scripted model answers each the same).
const tokens = samples.map((s) => [...s.prompt_ids, ...s.response_ids]);
let shared = 0;
while (tokens.every((t) => shared < t.length && t[shared] === tokens[0][shared])) shared++;
const stats = tree.answer.stats;

const pad = (v: string | number, n: number) => String(v).padStart(n);
console.log(
  `\n${pad("samples", 8)} ${pad("flat tokens", 12)} ${pad("tree tokens", 12)} ${pad("saved", 7)} ${
    pad("shared prefix", 14)
  } ${pad("saved / shared", 15)}`,
);
console.log(
  `${pad(stats.leaves, 8)} ${pad(stats.flat_tokens, 12)} ${pad(stats.tree_tokens, 12)} ${
    pad(`${(100 * stats.saved_tokens / stats.flat_tokens).toFixed(1)}%`, 7)
  } ${pad(shared, 14)} ${pad((stats.saved_tokens / shared).toFixed(2), 15)}`,
);
console.log(
  `shared prefix counted once: ${
    stats.saved_tokens >= (stats.leaves - 1) * shared ? "yes" : "NO"
  } (saved ≥ ${stats.leaves - 1} × shared)`,
);
console.log(
  `\n${pad("export", 8)} ${pad("ms", 8)} ${pad("JSON", 10)}\n${pad("flat", 8)} ${
    pad(flat.ms.toFixed(1), 8)
  } ${pad(`${(flat.bytes / 1024).toFixed(0)} KiB`, 10)}\n${pad("tree", 8)} ${
    pad(tree.ms.toFixed(1), 8)
  } ${pad(`${(tree.bytes / 1024).toFixed(0)} KiB`, 10)}`,
);
console.log(`tree export time / flat: ${(tree.ms / flat.ms).toFixed(2)}×`);
await gw.close();
