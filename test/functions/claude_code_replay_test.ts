/**
 * Replays the requests the real Claude Code CLI sent (fixtures/claude_code/episode.json, made by
 * fixtures/claude_code/record.ts) without the CLI: every field is accounted for, the episode
 * records as one token-exact chain, and counts match what Claude Code reads.
 */
import assert from "node:assert/strict";
import { unaccounted } from "../../lib/anthropic/mod.ts";
import { episode, replay } from "../_claude_episode.ts";
import { ENGINE_APIS, engineEnv, onEngine, startGateway } from "../_gateway.ts";
import { assertFieldsAccounted } from "../_recorded.ts";

Deno.test("every field and header Claude Code sends is used or deliberately ignored", async () => {
  assert.ok(episode.requests.length >= 4);
  const recorded = [episode.requests];
  for (const name of ["subagent", "parallel", "compaction", "side"]) {
    const file = new URL(`../../fixtures/claude_code/${name}.json`, import.meta.url);
    recorded.push(JSON.parse(await Deno.readTextFile(file)).requests);
  }
  assertFieldsAccounted(recorded.flat(), unaccounted);
});

for (const api of ENGINE_APIS) {
  Deno.test(
    onEngine("the recorded Claude Code episode replays as one token-exact chain", api),
    async () => {
      const gw = await startGateway({ script: episode.replies, env: engineEnv(api) });
      try {
        const { id, token } = await gw.openSession();
        const { replies } = await replay(gw, token);
        assert.deepEqual(replies.map((r) => r.stop_reason), [
          "tool_use",
          "tool_use",
          "tool_use",
          "end_turn",
        ]);
        const calls = gw.engine.calls;
        assert.equal(calls.length, episode.requests.length);
        for (let k = 0; k + 1 < calls.length; k++) {
          const previous = [...calls[k].inputIds, ...calls[k].output!];
          assert.deepEqual(
            calls[k + 1].inputIds.slice(0, previous.length),
            previous,
            `turn ${k + 1}`,
          );
        }
        // usage.input_tokens is the prompt the engine read: Claude Code compacts on it.
        assert.deepEqual(
          replies.map((r) => r.usage.input_tokens),
          calls.map((c) => c.inputIds.length),
        );
        const [sample, ...others] = await gw.samples(id);
        assert.equal(others.length, 0);
        assert.deepEqual(
          sample.response_ids.filter((_, i) => sample.loss_mask[i] === 1),
          calls.flatMap((c) => c.output!),
        );

        // The prompt as the model sees it: the mid-conversation system message folded into the
        // user turn, the attribution line left out, every tool rendered.
        const prompt = gw.tokenizer.decode(calls[0].inputIds);
        assert.match(prompt, /<system-reminder>\n# Environment\n/);
        assert.doesNotMatch(prompt, /x-anthropic-billing-header/);
        assert.match(prompt, /"name": "Write"/);
        assert.match(prompt, /Write a script that prints a greeting and run it\./);
      } finally {
        await gw.close();
      }
    },
  );
}

Deno.test("count_tokens on a recorded request counts what the next turn's usage reports", async () => {
  const gw = await startGateway({ script: episode.replies });
  try {
    const { token } = await gw.openSession();
    const count = async (body: unknown) => {
      const response = await gw.fetch("/v1/messages/count_tokens?beta=true", {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      assert.equal(response.status, 200);
      return (await response.json()).input_tokens as number;
    };
    const { max_tokens: _, stream: __, ...first } = episode.requests[0].body;
    const before = await count(first);
    const { replies, last } = await replay(gw, token);
    assert.equal(before, replies[0].usage.input_tokens);
    // A request extending the recorded chain is counted as the chain plus the delta: the same
    // number the turn then reports.
    const next = {
      ...last,
      messages: [
        ...last.messages,
        { role: "assistant", content: replies.at(-1)!.content },
        { role: "user", content: "Thanks. Now delete the script." },
      ],
    };
    const counted = await count({ ...next, max_tokens: undefined, stream: undefined });
    assert.equal(gw.engine.calls.length, episode.requests.length, "counting generates nothing");
    const turn = await gw.fetch("/v1/messages", {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ ...next, stream: false }),
    });
    assert.equal(turn.status, 200);
    assert.equal(counted, (await turn.json()).usage.input_tokens);
    assert.equal(counted, gw.engine.calls.at(-1)!.inputIds.length);
  } finally {
    await gw.close();
  }
});
