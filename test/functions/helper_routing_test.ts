/**
 * Which conversation is the agent's own, over each protocol, with token checks: a trailing
 * helper with its own system prompt and tools, re-sending the agent's conversation after its
 * last turn (Qwen Code's memory extractor does), is a side chain and leaves the agent's chain
 * `final` with the reward under `final_only`; a request that renames or removes a tool stays on
 * its chain, and the model is told by name which tools went (a call to one is text, flagged).
 */
import assert from "node:assert/strict";
import { assertChainExact, callsOfSample } from "../_chain_exact.ts";
import { ADMIN_HEADERS, type SampleJson, startGateway, type TestGateway } from "../_gateway.ts";
import { PROTOCOLS, send } from "../_protocols.ts";
import { keys } from "../../lib/kv/mod.ts";

const call = (name: string, args: Record<string, unknown>) =>
  `<tool_call>\n${JSON.stringify({ name, arguments: args })}\n</tool_call>`;

const AGENT = "You are a coding agent.";
const EXTRACTOR = "You extract durable memories from the conversation in your context.";

/** Segments with their rewards, side chains included. */
async function segments(gw: TestGateway, id: string, allocation: string) {
  const response = await gw.fetch(
    `/sessions/${id}/samples?include_side=true&reward_allocation=${allocation}`,
    { headers: ADMIN_HEADERS },
  );
  assert.equal(response.status, 200);
  return (await response.json()).samples as (SampleJson & { reward: number | null })[];
}

for (const protocol of PROTOCOLS) {
  for (const stream of [false, true]) {
    Deno.test(`${protocol.name}${stream ? " (streamed)" : ""}: a trailing helper with its own system prompt and tools leaves the agent's chain final`, async () => {
      const gw = await startGateway({
        script: [
          call("Bash", { command: "ls" }),
          "Two files.",
          // The helper: a look at its own files, then its answer.
          call("Read", { command: "MEMORY.md" }),
          "Nothing worth remembering.",
        ],
      });
      try {
        const { id, token } = await gw.openSession();
        let request = protocol.first({
          system: AGENT,
          tools: [{ name: "Bash" }, { name: "Read" }, { name: "Write" }, { name: "agent" }],
          question: "What is here?",
          stream,
        });
        const first = await send(gw, protocol, token, request);
        request = protocol.next(request, first.reply, { result: "a b" });
        const answer = await send(gw, protocol, token, request);
        assert.deepEqual(answer.texts, ["Two files."]);
        // After the agent's last turn, the helper re-sends its conversation and asks its own.
        let helper = protocol.next(
          protocol.retarget(request, EXTRACTOR, [{ name: "Read" }, { name: "Write" }]),
          answer.reply,
          { question: "Update durable memory from the conversation above." },
        );
        const look = await send(gw, protocol, token, helper);
        assert.deepEqual(look.calls, [{ name: "Read", input: { command: "MEMORY.md" } }]);
        helper = protocol.next(helper, look.reply, { result: "(empty)" });
        await send(gw, protocol, token, helper);

        const calls = gw.engine.calls;
        assert.equal(calls.length, 4);
        const trained = await gw.samples(id);
        assertChainExact(calls.slice(0, 2), trained, "the agent's chain");
        const all = await segments(gw, id, "final_only");
        assert.deepEqual(all.map((s) => [s.kind, s.turns.length]), [["final", 2], ["side", 2]]);
        assertChainExact(callsOfSample(calls, all[1]), [{ ...all[1], kind: "final" }], "helper");
        assert.deepEqual(callsOfSample(calls, all[1]), calls.slice(2));
        const rewarded = await gw.fetch(`/sessions/${id}/reward`, {
          method: "POST",
          headers: ADMIN_HEADERS,
          body: JSON.stringify({ score: 1 }),
        });
        assert.equal(rewarded.status, 200);
        assert.deepEqual(
          (await segments(gw, id, "final_only")).map((s) => [s.kind, s.reward]),
          [["final", 1], ["side", 0]],
        );
      } finally {
        await gw.close();
      }
    });
  }

  Deno.test(`${protocol.name}: a tool renamed, then one removed, stays on the chain; the model is told which went`, async () => {
    const gw = await startGateway({
      script: [
        call("Bash", { command: "ls" }),
        call("Shell", { command: "cat a" }),
        // The model calls the tool it was told is gone: text, flagged ill-formed.
        call("Read", { command: "a" }),
      ],
    });
    try {
      const { id, token } = await gw.openSession();
      let request = protocol.first({
        system: AGENT,
        tools: [{ name: "Bash" }, { name: "Read" }],
        question: "What is here?",
      });
      const first = await send(gw, protocol, token, request);
      assert.deepEqual(first.calls.map((c) => c.name), ["Bash"]);
      // Bash renamed to Shell.
      request = protocol.retarget(
        protocol.next(request, first.reply, { result: "a" }),
        AGENT,
        [{ name: "Shell" }, { name: "Read" }],
      );
      const second = await send(gw, protocol, token, request);
      assert.deepEqual(second.calls.map((c) => c.name), ["Shell"]);
      // Read removed.
      request = protocol.retarget(
        protocol.next(request, second.reply, { result: "contents" }),
        AGENT,
        [{ name: "Shell" }],
      );
      const third = await send(gw, protocol, token, request);
      assert.deepEqual(third.calls, [], "a call to a withdrawn tool is not a call");

      const calls = gw.engine.calls;
      const samples = await gw.samples(id);
      assertChainExact(calls, samples, "one chain through the renames");
      assert.deepEqual(samples[0].turns.map((t) => t.flags), [[], [], ["ill_formed"]]);
      const delta = (k: number) =>
        gw.tokenizer.decode(
          calls[k].inputIds.slice(calls[k - 1].inputIds.length + calls[k - 1].output!.length),
        );
      const shell = JSON.stringify({
        type: "function",
        function: {
          name: "Shell",
          parameters: { type: "object", properties: { command: { type: "string" } } },
        },
      });
      assert.ok(
        delta(1).includes(
          `These tools are no longer available: "Bash". Do not call them.\n` +
            `These tools are available from now on:\n<tools>\n${shell}\n</tools>`,
        ),
        delta(1),
      );
      assert.ok(
        delta(2).includes(`These tools are no longer available: "Read". Do not call them.`),
        delta(2),
      );
      assert.ok(!delta(2).includes("available from now on"), "nothing was added");
      const header = await gw.kv.get<{ tools: string[] }>(keys.chain(id, samples[0].chain_id));
      assert.deepEqual(header.value?.tools, ["Shell"]);
    } finally {
      await gw.close();
    }
  });
}

Deno.test("a rewind past the turn that added a tool tells the model of it again", async () => {
  const gw = await startGateway({
    script: [call("Bash", { command: "ls" }), "Read is there.", "Read again."],
  });
  try {
    const { id, token } = await gw.openSession();
    const protocol = PROTOCOLS[0];
    const first = protocol.first({ system: AGENT, tools: [{ name: "Bash" }], question: "Go" });
    const one = await send(gw, protocol, token, first);
    // The second turn adds Read: its delta defines it.
    const tools = [{ name: "Bash" }, { name: "Read" }];
    const second = protocol.retarget(
      protocol.next(first, one.reply, { result: "a" }),
      AGENT,
      tools,
    );
    await send(gw, protocol, token, second);
    // The client goes back to after the first turn and says something else: a rewind, which
    // drops the second turn and with it the note that defined Read.
    const rewound = protocol.retarget(
      protocol.next(first, one.reply, { question: "Use Read instead." }),
      AGENT,
      tools,
    );
    await send(gw, protocol, token, rewound);
    const calls = gw.engine.calls;
    assert.equal(calls.length, 3);
    const kept = calls[0].inputIds.length + calls[0].output!.length;
    assert.deepEqual(calls[2].inputIds.slice(0, kept), calls[1].inputIds.slice(0, kept));
    const delta = gw.tokenizer.decode(calls[2].inputIds.slice(kept));
    assert.match(delta, /Use Read instead\./);
    assert.match(
      delta,
      /These tools are available from now on, in addition to those listed before/,
    );
    assert.match(delta, /"name":"Read"/);
    const [sample] = await gw.samples(id);
    assert.deepEqual(sample.turns.length, 2, "the rewound turn replaced the second");
  } finally {
    await gw.close();
  }
});

Deno.test("a helper with no tools that came first yields the main chain to the agent's conversation", async () => {
  const gw = await startGateway({ script: ["Fix login bug", "Looking.", "Helper verdict."] });
  try {
    const { id, token } = await gw.openSession();
    const protocol = PROTOCOLS[0];
    const title = protocol.first({ system: "Write a title.", tools: [], question: "Fix the bug." });
    await send(gw, protocol, token, title);
    await send(
      gw,
      protocol,
      token,
      protocol.first({ system: AGENT, tools: [{ name: "Bash" }], question: "Fix the bug." }),
    );
    // Another tool-less helper after it is a side chain: the agent's conversation stays final.
    await send(gw, protocol, token, { ...title, messages: [{ role: "user", content: "Again." }] });
    const all = await segments(gw, id, "final_only");
    assert.deepEqual(all.map((s) => [s.chain_id, s.kind]), [["c0", "side"], ["c1", "final"], [
      "c2",
      "side",
    ]]);
    assertChainExact(gw.engine.calls.slice(1, 2), await gw.samples(id), "the agent's chain");
  } finally {
    await gw.close();
  }
});
