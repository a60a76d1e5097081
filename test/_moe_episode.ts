/**
 * A Claude-Code-sized episode for the routed-experts tests (R3), driven over HTTP as Claude Code
 * sends it: the real CLI's system prompt and tools (fixtures/claude_code/subagent.json, ~12k
 * tokens before the first sampled one), six tool turns, an `Agent` dispatch whose sub-agent runs
 * three turns of its own (its requests named by `x-claude-code-agent-id`, its system prompt the
 * CLI's sub-agent one), the report read back and four more turns, then a compaction: a new
 * conversation of the same agent from a summary, two turns. Half the turns stream. And what the
 * exports' routes must equal: for every position, the row the first engine call that forwarded it
 * reported, whole arrays.
 *
 * @module
 */
import assert from "node:assert/strict";
import type { RecordedScenario } from "../fixtures/claude_code/record.ts";
import { type MoeShape, readNpy } from "../lib/engine/mod.ts";
import type { EngineCall } from "../lib/scripted_engine/mod.ts";
import { readScenario } from "./_claude_scenario.ts";
import { ADMIN_TOKEN, type SampleJson, type TestGateway } from "./_gateway.ts";
import { sseMessage } from "./_sse.ts";

/** A small MoE shape, a dense first layer: Qwen3-MoE's keys, tests' sizes. */
export const TEST_MOE: MoeShape = { layers: 4, topK: 2, experts: 16, denseLayers: [0] };

/** The sub-agent's task, as the dispatching `Agent` call and its first request both hold it. */
const TASK = "SUBTASK-ALPHA: run echo alpha and report.";

type Body = RecordedScenario["requests"][number]["body"];
type Block = { type: string; [key: string]: unknown };

/** A tool call in Qwen3's format, as the model writes it. */
function call(name: string, input: Record<string, unknown>): string {
  return `<tool_call>\n${JSON.stringify({ name, arguments: input })}\n</tool_call>`;
}

/** A tool output of about 2 KB, as Claude Code's Bash results are. */
function output(n: number): string {
  return Array.from({ length: 40 }, (_, i) => `line ${i} of output ${n}: ${"x".repeat(40)}`)
    .join("\n");
}

/**
 * Runs the episode in session `token`; each reply is the next of the engine's script, and
 * `afterTurn` is told after each turn (with how many turns are done).
 */
export async function moeEpisode(
  gw: TestGateway,
  token: string,
  afterTurn: (turns: number) => Promise<void> = () => Promise.resolve(),
): Promise<void> {
  const recorded = await readScenario("subagent");
  const mainBase = recorded.requests[0];
  const subBase = recorded.requests[2];
  let reply = "";
  // A resumed call (after an engine-side abort) goes on from what the aborted one sampled.
  const script = (_call: unknown, prompt: () => string) => {
    const text = prompt();
    for (let k = reply.length - 1; k > 0; k--) {
      if (text.endsWith(reply.slice(0, k))) return reply.slice(k);
    }
    return reply;
  };
  gw.engine.setScript(script);
  for (const worker of gw.fleet?.workers ?? []) worker.setScript(script);
  let turns = 0;
  const send = async (
    base: RecordedScenario["requests"][number],
    messages: Body["messages"],
    text: string,
  ): Promise<Block[]> => {
    reply = text;
    const stream = turns++ % 2 === 1;
    const response = await gw.fetch(base.path, {
      method: "POST",
      headers: { ...base.headers, authorization: `Bearer ${token}` },
      body: JSON.stringify({ ...base.body, messages, stream }),
    });
    const body = await response.text();
    assert.equal(response.status, 200, body);
    const message = stream ? sseMessage(body) : JSON.parse(body);
    await afterTurn(turns);
    return message.content as Block[];
  };
  const toolTurn = async (
    base: RecordedScenario["requests"][number],
    messages: Body["messages"],
    text: string,
    result: string,
  ) => {
    const content = await send(base, messages, text);
    messages.push({ role: "assistant", content });
    const use = content.find((block) => block.type === "tool_use")!;
    messages.push({
      role: "user",
      content: [{ type: "tool_result", tool_use_id: use.id, content: result }],
    });
  };

  const main: Body["messages"] = [structuredClone(mainBase.body.messages[0])];
  for (let i = 0; i < 6; i++) {
    await toolTurn(mainBase, main, call("Bash", { command: `ls part${i}` }), output(i));
  }
  // The dispatch: its report comes back once the sub-agent is done.
  const dispatch = await send(
    mainBase,
    main,
    call("Agent", { description: "Run alpha", prompt: TASK, subagent_type: "general-purpose" }),
  );
  main.push({ role: "assistant", content: dispatch });
  const sub: Body["messages"] = [structuredClone(subBase.body.messages[0])];
  assert.ok(JSON.stringify(sub[0]).includes(TASK), "the sub-agent's request quotes its task");
  for (let i = 0; i < 2; i++) {
    await toolTurn(subBase, sub, call("Bash", { command: `echo alpha ${i}` }), output(100 + i));
  }
  await send(subBase, sub, "alpha, twice.");
  const agentUse = dispatch.find((block) => block.type === "tool_use")!;
  main.push({
    role: "user",
    content: [{ type: "tool_result", tool_use_id: agentUse.id, content: "alpha, twice." }],
  });
  for (let i = 6; i < 10; i++) {
    await toolTurn(mainBase, main, call("Bash", { command: `ls part${i}` }), output(i));
  }
  // The compaction: the same agent starts again from a summary of the conversation so far.
  const compacted: Body["messages"] = [{
    role: "user",
    content: "This session is being continued from a previous conversation that ran out of " +
      "context. Summary: the parts were listed and alpha echoed twice. Continue.",
  }];
  await toolTurn(mainBase, compacted, call("Bash", { command: "ls done" }), output(20));
  await send(mainBase, compacted, "Done.");
}

/** The session's samples in `format` (`samples`, `slime`, `verl`, `jsonl`), with the side ones. */
export async function exported(
  gw: TestGateway,
  id: string,
  format = "samples",
): Promise<Record<string, unknown>[]> {
  const response = await gw.fetch(`/sessions/${id}/samples?format=${format}&include_side=true`, {
    headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
  });
  const text = await response.text();
  assert.equal(response.status, 200, text);
  if (format === "jsonl") return text.trim().split("\n").map((line) => JSON.parse(line));
  return (JSON.parse(text).samples ?? JSON.parse(text).records) as Record<string, unknown>[];
}

/** A `.npy` the gateway serves at `url`: its shape and its values. */
export async function fetchRoutes(
  gw: TestGateway,
  url: string,
): Promise<{ shape: readonly number[]; values: number[] }> {
  const response = await gw.fetch(url, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
  assert.equal(response.status, 200, url);
  const bytes = new Uint8Array(await response.arrayBuffer());
  assert.equal(Number(response.headers.get("content-length")), bytes.length);
  const array = readNpy(bytes);
  return { shape: array.shape, values: Array.from(array.values) };
}

/**
 * The rows a sample's routes must hold: each position's row as the first engine call that
 * forwarded it reported it (calls in arrival order, across every worker), `-1` where none did, for
 * `rows` positions.
 */
export function expectedRows(
  calls: readonly EngineCall[],
  sample: Pick<SampleJson, "prompt_ids" | "response_ids">,
  rows: number,
  shape: MoeShape,
): number[] {
  const width = shape.layers * shape.topK;
  const tokens = [...sample.prompt_ids, ...sample.response_ids];
  const expected: number[] = new Array(rows * width).fill(-1);
  const filled = new Uint8Array(rows);
  for (const call of [...calls].sort((a, b) => a.receivedAt - b.receivedAt)) {
    if (!call.routes || !call.output) continue;
    const sequence = [...call.inputIds, ...call.output];
    // Only a call of this sample: its sequence is a prefix of the sample's tokens.
    if (sequence.length > tokens.length || sequence.some((id, i) => tokens[i] !== id)) continue;
    const { start, values } = call.routes;
    for (let r = 0; r < values.length / width; r++) {
      const position = start + r;
      if (position >= rows || filled[position]) continue;
      filled[position] = 1;
      for (let v = 0; v < width; v++) expected[position * width + v] = values[r * width + v];
    }
  }
  return expected;
}

/**
 * slime's checks of a sample's routes: `len(tokens) - 1` rows, ids in range where the engine
 * routed the position (`-1` marking the rows it never forwarded, as many as the export says), and
 * no MoE layer all zeros.
 */
export function assertSlimeRoutes(
  values: readonly number[],
  shape: readonly number[],
  tokens: number,
  moe: MoeShape,
  missingRows: number,
): void {
  const [rows, layers, topK] = shape;
  assert.deepEqual(shape, [tokens - 1, moe.layers, moe.topK]);
  const width = layers * topK;
  let missing = 0;
  for (let r = 0; r < rows; r++) {
    const row = values.slice(r * width, (r + 1) * width);
    if (row.every((id) => id === -1)) {
      missing++;
      continue;
    }
    assert.ok(row.every((id) => id >= 0 && id < moe.experts), `row ${r} in range`);
  }
  assert.equal(missing, missingRows);
  for (let layer = 0; layer < layers; layer++) {
    if (moe.denseLayers.includes(layer)) continue;
    let nonzero = false;
    for (let r = 0; r < rows && !nonzero; r++) {
      for (let k = 0; k < topK; k++) if (values[r * width + layer * topK + k] > 0) nonzero = true;
    }
    assert.ok(nonzero, `MoE layer ${layer} is not all zeros`);
  }
}
