import assert from "node:assert/strict";
import {
  type ChainHeader,
  deltaAfter,
  type FinishReason,
  flattenChain,
  type TurnRecord,
} from "../../lib/chain/mod.ts";
import type { ChatMessage, ChatTool } from "../../lib/chat/mod.ts";
import {
  type Segment,
  selectSegments,
  toXtuner,
  type XtunerMessage,
  type XtunerRecord,
} from "../../lib/segment/mod.ts";
import type { RewardedSession } from "../../lib/session/mod.ts";
import type { ChatTokenizer } from "../../lib/tokenizer/mod.ts";
import { renderDelta, renderPrompt } from "../../lib/template/mod.ts";
import { type Family, familyTokenizer, writeTurn } from "../_families.ts";
import { qwen3 } from "../_gateway.ts";

/** One turn of a test chain: what its request added, what was sampled, how it ended. */
interface TurnSpec {
  readonly delta: number[];
  readonly output: number[];
  readonly closing?: number[];
  readonly finishReason?: FinishReason;
  readonly toolCalls?: number;
  readonly masked?: boolean;
}

/** A logprob for output position `i` of turn `turn`, distinct for every token. */
const logprobOf = (turn: number, i: number) => -(turn * 1000 + i + 1) / 64;

function segmentOf(specs: readonly TurnSpec[], index = 0): Segment {
  const turns = specs.map((spec, i): TurnRecord => ({
    index: i,
    rid: `rid${i}`,
    parent: i === 0 ? null : `rid${i - 1}`,
    inputLen: 0,
    deltaLen: spec.delta.length,
    outputLen: spec.output.length,
    closingLen: spec.closing?.length ?? 0,
    finishReason: spec.finishReason ?? "end_of_turn",
    stopSequence: null,
    flags: spec.masked ? ["masked"] : [],
    toolCalls: spec.toolCalls ?? 0,
    masked: spec.masked ?? false,
    weightVersions: ["default"],
    aborts: 0,
    startsInReasoning: false,
    reasoning: false,
    toolNames: ["Bash"],
    model: "qwen3",
    messageCount: 0,
    digest: "",
    requestDigest: "",
    bodyDigest: "",
    chunks: 1,
    createdAt: 0,
    timings: { renderMs: 0, engineMs: 0, engineReportedMs: 0, totalMs: 0 },
  }));
  const arrays = flattenChain(turns.map((record, i) => ({
    record,
    tokens: {
      delta: Uint32Array.from(specs[i].delta),
      output: Uint32Array.from(specs[i].output),
      logprobs: Float64Array.from(specs[i].output, (_, k) => logprobOf(i, k)),
      closing: Uint32Array.from(specs[i].closing ?? []),
    },
  })));
  return {
    index,
    kind: "final",
    header: { id: `c${index}`, tools: ["Bash"] } as unknown as ChainHeader,
    turns,
    arrays,
    lineage: { parent: null, dispatch: null, agent_id: null },
    stats: {
      turns: turns.length,
      finish_reason: turns.at(-1)!.finishReason,
      aborts: 0,
      masked_turns: turns.filter((turn) => turn.masked).length,
      ill_formed_turns: 0,
      tool_turns: turns.filter((turn) => turn.toolCalls > 0).length,
      weight_versions: ["default"],
    },
  };
}

function sessionOf(reward: RewardedSession["reward"], closedAs?: "aborted"): RewardedSession {
  return {
    id: "s1",
    metadata: {},
    reward,
    status: closedAs ? "closed" : "open",
    ...(closedAs ? { closedAs } : {}),
  } as unknown as RewardedSession;
}

const POLICY = {
  allocation: "uniform" as const,
  includeSide: false,
  maxSegments: 64,
  maxSegmentTokens: 0,
  overlong: "mask" as const,
};

/** The segments as xtuner records, through the same selection as an export. */
function records(
  session: RewardedSession,
  segments: Segment[],
  tokenizer: ChatTokenizer,
  tools: readonly ChatTool[] | null = null,
): XtunerRecord[] {
  return selectSegments(session, segments, POLICY).segments.map((segment) =>
    toXtuner(session, segment, tokenizer, tools)
  );
}

/** The messages as `[role, text]`, the text decoded from their ids. */
const shape = (tokenizer: ChatTokenizer, messages: readonly XtunerMessage[]) =>
  messages.map((m) => [m.role, tokenizer.decode(m.token_ids)]);

/**
 * Asserts the messages' ids are the record's prompt and response, whole and in order, each
 * message's content its ids decoded, and an output's arrays as long as its ids.
 */
function assertConcatenates(tokenizer: ChatTokenizer, record: XtunerRecord): void {
  assert.deepEqual(
    record.agent.messages.flatMap((m) => m.token_ids),
    [...record.prompt_ids, ...record.response_ids],
  );
  for (const message of record.agent.messages) {
    assert.equal(message.content, tokenizer.decode(message.token_ids));
    if (message.sampled) {
      assert.equal(message.loss_mask.length, message.token_ids.length);
      assert.equal(message.logprobs.length, message.token_ids.length);
    }
  }
}

// Qwen3's pieces: each starts and ends at a special token, so its ids are its ids in context.
const SYSTEM = "<|im_start|>system\nYou are terse.<|im_end|>\n";
const USER = "<|im_start|>user\nList the files.<|im_end|>\n";
const HEADER = "<|im_start|>assistant\n";
const CALLS = '<think>\nLook first.\n</think>\n\n<tool_call>\n{"name": "Bash", "arguments": ' +
  '{"command": "ls"}}\n</tool_call>\n<tool_call>\n{"name": "Bash", "arguments": {"command": ' +
  '"ls src"}}\n</tool_call><|im_end|>';
const RESULT_1 = "\n<|im_start|>user\n<tool_response>\nREADME.md\n</tool_response>\n";
const RESULT_2 = "<tool_response>\nmain.ts\n</tool_response><|im_end|>\n";
const USER_2 = "<|im_start|>user\nAnd the tests?<|im_end|>\n";
const CUT = "There are no tests in";

async function qwenChain() {
  const tok = await qwen3();
  const ids = (text: string) => tok.encode(text);
  const segment = segmentOf([
    { delta: ids(SYSTEM + USER + HEADER), output: ids(CALLS), toolCalls: 2 },
    {
      delta: ids(RESULT_1 + RESULT_2 + USER_2 + HEADER),
      output: ids(CUT),
      closing: [tok.eosId],
      finishReason: "length",
    },
  ]);
  return { tok, ids, segment };
}

Deno.test("toXtuner() cuts a Qwen3 chain at its template's messages, tool results one by one", async () => {
  const { tok, ids, segment } = await qwenChain();
  const [record] = records(sessionOf({ score: 1 }), [segment], tok);
  assertConcatenates(tok, record);
  assert.deepEqual(record.agent.messages.map((m) => [m.role, m.token_ids]), [
    ["system", ids(SYSTEM)],
    ["user", ids(USER + HEADER)],
    ["assistant", ids(CALLS)],
    ["tool", ids(RESULT_1)],
    ["tool", ids(RESULT_2)],
    ["user", ids(USER_2 + HEADER)],
    ["assistant", [...ids(CUT), tok.eosId]],
  ]);
  assert.deepEqual(record.agent.messages.map((m) => m.content), [
    SYSTEM,
    USER + HEADER,
    CALLS,
    RESULT_1,
    RESULT_2,
    USER_2 + HEADER,
    CUT + "<|im_end|>",
  ]);
  assert.deepEqual(record.agent.messages.map((m) => m.sampled), [
    false,
    false,
    true,
    false,
    false,
    false,
    true,
  ]);
});

Deno.test("toXtuner() gives each output the engine's logprobs and its mask, the closing token 0, and its tool calls", async () => {
  const { tok, ids, segment } = await qwenChain();
  const [record] = records(sessionOf({ score: 1 }), [segment], tok);
  const [first, second] = record.agent.messages.filter((m) => m.sampled);
  assert.ok(first.sampled && second.sampled);
  const calls = ids(CALLS);
  assert.deepEqual(first.loss_mask, calls.map(() => 1));
  assert.deepEqual(first.logprobs, calls.map((_, k) => logprobOf(0, k)));
  assert.equal(first.finish_reason, "end_of_turn");
  assert.deepEqual(first.tool_calls, [
    { type: "function", function: { name: "Bash", arguments: { command: "ls" } } },
    { type: "function", function: { name: "Bash", arguments: { command: "ls src" } } },
  ]);
  const cut = ids(CUT);
  assert.deepEqual(second.loss_mask, [...cut.map(() => 1), 0], "the closing token is not trained");
  assert.deepEqual(second.logprobs, [...cut.map((_, k) => logprobOf(1, k)), 0]);
  assert.equal(second.finish_reason, "length");
  assert.equal("tool_calls" in second, false, "no tool_calls where the turn called none");
  // The messages' arrays are the record's, position for position.
  const sampled = record.agent.messages.flatMap((m) =>
    m.sampled ? m.loss_mask : m.token_ids.map(() => 0)
  );
  assert.deepEqual(sampled, [...record.prompt_ids.map(() => 0), ...record.loss_mask]);
  const masked = segmentOf([{ delta: ids(USER + HEADER), output: cut, masked: true }]);
  const [maskedRecord] = records(sessionOf(null), [masked], tok);
  const output = maskedRecord.agent.messages[1];
  assert.ok(output.sampled);
  assert.deepEqual(output.loss_mask, cut.map(() => 0), "a masked turn is not trained");
  assert.deepEqual(output.logprobs, cut.map((_, k) => logprobOf(0, k)), "its logprobs are kept");
});

Deno.test("toXtuner() carries the segment's share of the score with the payload's metrics, the tools and the lengths", async () => {
  const { tok, ids, segment } = await qwenChain();
  const other = segmentOf([{ delta: ids(USER + HEADER), output: ids("Fine.<|im_end|>") }], 1);
  const session = sessionOf({ score: 0.8, tests_passed: 3, evidence: { log: "ok" } });
  const tools: ChatTool[] = [
    { type: "function", function: { name: "Bash", parameters: { type: "object" } } },
  ];
  const [record, final] = records(session, [segment, other], tok, tools);
  assert.deepEqual(record.reward, { score: 0.4, tests_passed: 3, evidence: { log: "ok" } });
  assert.deepEqual(final.reward, { score: 0.4, tests_passed: 3, evidence: { log: "ok" } });
  assert.deepEqual(record.agent.tools, tools);
  assert.deepEqual(record.agent.tool_names, ["Bash"]);
  assert.equal(record.agent.tool_turns, 1);
  assert.equal(record.session_id, "s1");
  assert.equal(record.rollout_id, "s1");
  assert.equal(record.chain_id, "c0");
  assert.equal(record.prompt_len, record.prompt_ids.length);
  assert.equal(record.response_len, record.response_ids.length);
  assert.equal(record.raw_prompt, SYSTEM + USER + HEADER);
  assert.equal(record.finish_reason, "length");
  assert.deepEqual(record.prompt_ids, segment.arrays.prompt_ids);
  assert.deepEqual(record.response_ids, segment.arrays.response_ids);
  assert.deepEqual(record.loss_mask, segment.arrays.loss_mask);
  assert.deepEqual(record.logprobs, segment.arrays.logprobs);
  assert.deepEqual(record.version_spans, segment.arrays.version_spans);
  const [unscored] = records(sessionOf(null), [segment], tok);
  assert.equal(unscored.reward, null, "no reward before the trainer set one");
});

Deno.test("toXtuner() says xtuner's status: completed, truncated, aborted, or failed with nothing to train", async () => {
  const { tok, ids, segment } = await qwenChain();
  const done = segmentOf([{ delta: ids(USER + HEADER), output: ids("Fine.<|im_end|>") }]);
  const masked = segmentOf([{ delta: ids(USER + HEADER), output: ids("Fine."), masked: true }]);
  const status = (s: Segment, closedAs?: "aborted") =>
    records(sessionOf({ score: 1 }, closedAs), [s], tok)[0].status;
  assert.equal(status(done), "completed");
  assert.equal(status(segment), "truncated");
  assert.equal(status(done, "aborted"), "aborted");
  assert.equal(status(masked), "failed");
});

Deno.test("toXtuner() makes each run one context message when the template's markers are not tokens", async () => {
  const { tok, ids, segment } = await qwenChain();
  // DeepSeek's markers are not tokens of Qwen3's vocabulary.
  const foreign = { ...tok, formats: { toolCallParser: "deepseekv31", reasoningParser: null } };
  const [record] = records(sessionOf(null), [segment], foreign);
  assertConcatenates(tok, record);
  assert.deepEqual(record.agent.messages.map((m) => [m.role, m.token_ids]), [
    ["context", ids(SYSTEM + USER + HEADER)],
    ["assistant", ids(CALLS)],
    ["context", ids(RESULT_1 + RESULT_2 + USER_2 + HEADER)],
    ["assistant", [...ids(CUT), tok.eosId]],
  ]);
});

Deno.test("toXtuner() refuses a segment whose turns do not add up to its arrays", async () => {
  const { tok, segment } = await qwenChain();
  const short = { ...segment, turns: segment.turns.slice(0, 1) };
  assert.throws(
    () => records(sessionOf(null), [short], tok),
    (error) => error instanceof RangeError && /its turns end early/.test(error.message),
  );
});

/**
 * A two-turn chain in `family`'s tokens as the gateway records it: the first prompt and each delta
 * rendered by the family's template, the outputs written in its format.
 */
async function familyChain(family: Family) {
  const tok = await familyTokenizer(family);
  const tools: ChatTool[] = [{
    type: "function",
    function: {
      name: "Bash",
      description: "Run a command.",
      parameters: { type: "object", properties: { command: { type: "string" } } },
    },
  }];
  const prompt = renderPrompt(tok, {
    messages: [
      { role: "system", content: "You are terse." },
      { role: "user", content: "List the files." },
    ],
    tools,
  }).tokens;
  const sampled = (content: Parameters<typeof writeTurn>[1]) => {
    const written = writeTurn(family, content, false);
    const ids = tok.encode(written.text);
    return written.eos === false ? ids : [...ids, tok.ending.stopIds[0]];
  };
  const first = sampled({ calls: [{ name: "Bash", input: { command: "ls" } }] });
  const results: ChatMessage[] = [
    { role: "tool", name: "Bash", tool_call_id: "functions.Bash:0", content: "README.md" },
  ];
  const delta = deltaAfter(first.at(-1), renderDelta(tok, results).tokens, tok.ending.stopIds);
  const second = sampled({ text: "One file." });
  const segment = segmentOf([
    { delta: prompt, output: first, toolCalls: 1 },
    { delta, output: second },
  ]);
  const [record] = records(sessionOf(null), [segment], tok);
  return { tok, record, first, second };
}

Deno.test("toXtuner() reads each family's role markers: system, user, the call, its result", async () => {
  const expected: Record<Family, string[]> = {
    qwen3_coder: ["system", "user", "assistant", "tool", "assistant"],
    // DeepSeek's system prompt comes before any marker; each result is a tool output block.
    deepseek_v31: ["system", "user", "assistant", "tool", "assistant"],
    // Harmony's own system message, then the developer's instructions.
    gpt_oss: ["system", "developer", "user", "assistant", "tool", "assistant"],
    // GLM and Kimi K2 write the tools in a system message of their own first.
    glm45: ["system", "system", "user", "assistant", "tool", "assistant"],
    glm47: ["system", "system", "user", "assistant", "tool", "assistant"],
    kimi_k2: ["system", "system", "user", "assistant", "tool", "assistant"],
  };
  for (const [family, roles] of Object.entries(expected) as [Family, string[]][]) {
    const { tok, record, first, second } = await familyChain(family);
    assertConcatenates(tok, record);
    assert.deepEqual(record.agent.messages.map((m) => m.role), roles, family);
    const outputs = record.agent.messages.filter((m) => m.sampled);
    assert.deepEqual(outputs.map((m) => m.token_ids), [first, second], `${family} outputs`);
    assert.deepEqual(outputs[0].sampled && outputs[0].tool_calls, [
      { type: "function", function: { name: "Bash", arguments: { command: "ls" } } },
    ], `${family} the call`);
    const result = record.agent.messages.at(-2)!;
    assert.match(tok.decode(result.token_ids), /README\.md/, `${family} the result`);
    // The assistant header before an output ends the message before it.
    const user = record.agent.messages.at(-4)!;
    assert.equal(user.role, "user", family);
    assert.match(user.content, /List the files\./, family);
  }
});

Deno.test("toXtuner() gives GLM's tool result the role marker the model sampled to end its call", async () => {
  const { tok, record, first } = await familyChain("glm45");
  assert.equal(tok.decode(first.slice(-1)), "<|observation|>", "the model wrote the marker");
  assert.deepEqual(shape(tok, record.agent.messages.slice(-2, -1)), [
    ["tool", "\n<tool_response>\nREADME.md\n</tool_response><|assistant|>"],
  ]);
});
