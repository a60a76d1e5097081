/**
 * The false forks the route planner fixed, over HTTP with token checks: clients that rewrite the
 * replies they echo keep one chain, a conversation interleaved with a helper call resumes in
 * place, an edited reply realigns (or forks past the bound) without training a token the model
 * did not sample, and THINKING_HISTORY=template starts a new query from the template.
 */
import assert from "node:assert/strict";
import type { MessageParam } from "../../lib/anthropic/mod.ts";
import { scriptedLogprob } from "../../lib/scripted_engine/mod.ts";
import { assertChainExact, callsOfSample } from "../_chain_exact.ts";
import { type SampleJson, startGateway, type TestGateway } from "../_gateway.ts";

const TOOLS = [{ name: "Bash", input_schema: { type: "object" } }];
const call = (command: string) =>
  `<tool_call>\n${
    JSON.stringify({ name: "Bash", arguments: { command, timeout: 5 } })
  }\n</tool_call>`;

type Block = { type: string; id?: string; text?: string; [key: string]: unknown };

/** Sends a conversation; returns the reply's content. */
async function send(
  gw: TestGateway,
  token: string,
  messages: unknown[],
  options: { system?: string } = {},
): Promise<Block[]> {
  const response = await gw.fetch("/v1/messages", {
    method: "POST",
    headers: { "x-api-key": token },
    body: JSON.stringify({
      model: "qwen3",
      max_tokens: 256,
      system: options.system ?? "You are the main agent.",
      tools: TOOLS,
      messages,
    }),
  });
  assert.equal(response.status, 200, await response.clone().text());
  return (await response.json()).content;
}

/**
 * A reply echoed the way OpenAI-style clients and proxies echo it: reasoning dropped, text
 * trimmed and padded, an empty text block added, tool-call ids renamed (and `rename` remembers
 * them, so the tool results use the new ids), the input's keys reordered.
 */
function rewritten(content: Block[], rename: Map<string, string>): Block[] {
  const out: Block[] = [{ type: "text", text: "" }];
  for (const block of content) {
    if (block.type === "thinking") continue;
    if (block.type === "text") out.push({ type: "text", text: `  ${block.text!.trim()}\n` });
    if (block.type === "tool_use") {
      const id = `call_${rename.size}`;
      rename.set(block.id!, id);
      const input = block.input as Record<string, unknown>;
      const reordered = Object.fromEntries(Object.entries(input).reverse());
      out.push({ type: "tool_use", id, name: block.name, input: reordered });
    }
  }
  return out;
}

const results = (content: Block[], rename: Map<string, string>, output: string) => ({
  role: "user",
  content: content.filter((block) => block.type === "tool_use").map((block) => ({
    type: "tool_result",
    tool_use_id: rename.get(block.id!) ?? block.id,
    content: output,
  })),
});

/** Mask-1 tokens and logprobs of a sample, and the outputs of the calls they must be. */
function assertTrainsOnlySampled(sample: SampleJson, outputs: number[][]) {
  const mask1 = sample.response_ids.filter((_, i) => sample.loss_mask[i] === 1);
  assert.deepEqual(mask1, outputs.flat(), "mask-1 tokens are exactly the kept outputs");
  assert.deepEqual(
    sample.logprobs.filter((_, i) => sample.loss_mask[i] === 1),
    outputs.flatMap((output) => output.map((token, i) => scriptedLogprob(token, i))),
  );
}

Deno.test("a client that drops reasoning, trims text and renames tool ids on every turn keeps one exact chain", async () => {
  const gw = await startGateway({
    script: [
      `<think>\nList first.\n</think>\n\nListing the files. ${call("ls")}`,
      `<think>\nNow read.\n</think>\n\n${call("cat a.txt")}`,
      `<think>\nCount.\n</think>\n\nCounting.\n${call("wc -l a.txt")}`,
      "<think>\nDone.\n</think>\n\nThere are 3 lines.",
    ],
  });
  try {
    const { id, token } = await gw.openSession();
    const rename = new Map<string, string>();
    const messages: unknown[] = [{ role: "user", content: "What is in a.txt?" }];
    for (const output of ["a.txt", "one\ntwo\nthree", "3 a.txt"]) {
      const reply = await send(gw, token, messages);
      messages.push({ role: "assistant", content: rewritten(reply, rename) });
      messages.push(results(reply, rename, output));
    }
    const last = await send(gw, token, messages);
    assert.deepEqual(last.map((block) => block.type), ["thinking", "text"]);

    const samples = await gw.samples(id);
    assert.deepEqual(samples.map((sample) => sample.kind), ["final"], "one chain, no wipe");
    assertChainExact(gw.engine.calls, samples);
  } finally {
    await gw.close();
  }
});

Deno.test("a helper call with another system prompt between turns: the conversation resumes in place", async () => {
  const gw = await startGateway({
    script: (_call, text) =>
      text().includes("You judge commands.")
        ? "Verdict: safe."
        : text().includes("<tool_response>")
        ? "Done."
        : `Running it. ${call("ls")}`,
  });
  try {
    const { id, token } = await gw.openSession();
    const messages: unknown[] = [{ role: "user", content: "List the files." }];
    const first = await send(gw, token, messages);
    // The client checks the command with a helper of its own: same model, same tools.
    await send(gw, token, [{ role: "user", content: "Is `ls` safe?" }], {
      system: "You judge commands.",
    });
    messages.push({ role: "assistant", content: first }, results(first, new Map(), "a b"));
    await send(gw, token, messages);

    const samples = await gw.samples(id);
    assert.deepEqual(samples.map((s) => [s.chain_id, s.kind]), [["c0", "final"], ["c1", "wipe"]]);
    const session = await gw.session(id);
    assert.deepEqual(
      session.chains.map((chain: { id: string; turns: number }) => [chain.id, chain.turns]),
      [["c0", 2], ["c1", 1]],
      "two samples, as the peers produce: the conversation kept both its turns",
    );
    const main = samples[0];
    assertChainExact(callsOfSample(gw.engine.calls, main), [main]);
    assertChainExact(callsOfSample(gw.engine.calls, samples[1]), [{
      ...samples[1],
      kind: "final",
    }]);
  } finally {
    await gw.close();
  }
});

for (const bound of [256, 4]) {
  const realigns = bound > 4;
  Deno.test(`an edited reply ${realigns ? "realigns in place" : "past REALIGN_MAX_TOKENS starts a new chain"}; no unsampled token is trained`, async () => {
    const gw = await startGateway({
      script: [`Listing the files now. ${call("ls")}`, `Reading. ${call("cat a")}`, "Done."],
      env: { REALIGN_MAX_TOKENS: String(bound) },
    });
    try {
      const { id, token } = await gw.openSession();
      const messages: unknown[] = [{ role: "user", content: "List the files." }];
      const first = await send(gw, token, messages);
      messages.push({ role: "assistant", content: first }, results(first, new Map(), "a b"));
      const second = await send(gw, token, messages);
      // The client edits the second reply's text before echoing it.
      const edited = second.map((block) =>
        block.type === "text" ? { ...block, text: "Reading the file a, carefully." } : block
      );
      messages.push({ role: "assistant", content: edited }, results(second, new Map(), "x"));
      await send(gw, token, messages);

      const [c0, c1, c2] = gw.engine.calls;
      const samples = await gw.samples(id);
      if (realigns) {
        assert.deepEqual(samples.map((s) => [s.chain_id, s.kind]), [["c0", "final"]]);
        const [sample] = samples;
        assert.equal(sample.turns.length, 2, "the edited turn left the chain");
        assertTrainsOnlySampled(sample, [c0.output!, c2.output!]);
        assert.deepEqual(sample.prompt_ids, c0.inputIds);
        assert.deepEqual([...sample.prompt_ids, ...sample.response_ids], [
          ...c2.inputIds,
          ...c2.output!,
        ]);
        const context = gw.tokenizer.decode(
          c2.inputIds.slice(c0.inputIds.length + c0.output!.length),
        );
        assert.match(context, /Reading the file a, carefully\./, "the client's text is context");
      } else {
        assert.deepEqual(samples.map((s) => [s.chain_id, s.kind]), [["c0", "wipe"], [
          "c1",
          "final",
        ]]);
        assertTrainsOnlySampled(samples[0], [c0.output!, c1.output!]);
        assertTrainsOnlySampled(samples[1], [c2.output!]);
        assert.deepEqual(samples[1].prompt_ids, c2.inputIds, "the new chain renders everything");
      }
    } finally {
      await gw.close();
    }
  });
}

Deno.test("THINKING_HISTORY=template: a new user query after reasoning starts from the template's rendering", async () => {
  const gw = await startGateway({
    script: [
      `<think>\nSECRET-PLAN\n</think>\n\n${call("ls")}`,
      "<think>\nSummarize.\n</think>\n\nTwo files.",
      "Nice to help.",
    ],
    env: { THINKING_HISTORY: "template" },
  });
  try {
    const { id, token } = await gw.openSession();
    const messages: MessageParam[] = [{ role: "user", content: "List the files." }];
    const first = await send(gw, token, messages);
    messages.push({ role: "assistant", content: first as MessageParam["content"] });
    messages.push(results(first, new Map(), "a b") as MessageParam);
    const second = await send(gw, token, messages);
    messages.push({ role: "assistant", content: second as MessageParam["content"] });
    messages.push({ role: "user", content: "Thanks!" });
    await send(gw, token, messages);

    const samples = await gw.samples(id);
    assert.deepEqual(samples.map((s) => [s.chain_id, s.kind]), [["c0", "wipe"], ["c1", "final"]]);
    const [, c1] = samples;
    const c2 = gw.engine.calls[2];
    assert.deepEqual(c1.prompt_ids, c2.inputIds);
    const text = gw.tokenizer.decode(c1.prompt_ids);
    assert.doesNotMatch(text, /SECRET-PLAN/, "the template dropped the earlier reasoning");
    assertTrainsOnlySampled(c1, [c2.output!]);
    assertChainExact(callsOfSample(gw.engine.calls, samples[0]).slice(0, 2), [{
      ...samples[0],
      kind: "final",
    }]);
  } finally {
    await gw.close();
  }
});
