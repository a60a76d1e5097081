/**
 * Replays the requests the real Codex CLI sent (fixtures/codex/, made by
 * fixtures/codex/record.ts) without the CLI: every field and header is accounted for; the tool
 * episode, echoed exactly as the CLI echoed it (reasoning items with their encrypted content, call
 * ids and item ids from another gateway run), records as one token-exact chain, streamed or not;
 * and the sub-agent episode (`[agents]` on) records the sub-agent's requests, which carry the
 * root's system prompt, as a sub-agent chain linked to the `spawn_agent` call.
 */
import assert from "node:assert/strict";
import { unaccountedResponses } from "../../lib/responses/mod.ts";
import type { RecordedResponsesEpisode } from "../../fixtures/codex/record.ts";
import { assertChainExact, callsOfSample } from "../_chain_exact.ts";
import {
  ADMIN_HEADERS,
  ENGINE_APIS,
  engineEnv,
  onEngine,
  type SampleJson,
  startGateway,
} from "../_gateway.ts";
import { assertFieldsAccounted, readRecorded } from "../_recorded.ts";

const REPO = "/tmp/replayed-repo";
const episode = await readRecorded<RecordedResponsesEpisode>(
  new URL("../../fixtures/codex/episode.json", import.meta.url),
  REPO,
);

const subagent = await readRecorded<RecordedResponsesEpisode>(
  new URL("../../fixtures/codex/subagent.json", import.meta.url),
  REPO,
);

Deno.test("every field and header Codex sends is used or deliberately ignored, with [agents] on too", () => {
  assert.ok(episode.requests.length >= 3);
  assert.ok(subagent.requests.some((request) => request.headers["x-codex-parent-thread-id"]));
  assertFieldsAccounted(
    [...episode.requests, ...subagent.requests],
    unaccountedResponses,
    ["parameters"],
  );
});

Deno.test("the recorded Codex sub-agent episode replays as the root's chain and a sub-agent chain linked to its spawn_agent call", async () => {
  const gw = await startGateway({ script: subagent.requests.map((request) => request.reply) });
  try {
    const { id, token } = await gw.openSession();
    const spawns: { call_id: string; namespace?: string }[] = [];
    for (const request of subagent.requests) {
      const response = await gw.fetch(request.path, {
        method: request.method,
        headers: { ...request.headers, authorization: `Bearer ${token}` },
        body: JSON.stringify({ ...request.body, stream: false }),
      });
      const text = await response.text();
      assert.equal(response.status, 200, text);
      for (const item of JSON.parse(text).output) {
        if (item.type === "function_call" && item.name === "spawn_agent") spawns.push(item);
      }
    }
    // The model's call of a namespaced function is answered with its namespace.
    assert.equal(spawns.length, 1);
    assert.equal(spawns[0].namespace, "multi_agent_v1");
    const response = await gw.fetch(`/sessions/${id}/samples`, { headers: ADMIN_HEADERS });
    const samples: (SampleJson & { lineage: Record<string, string | null> })[] =
      (await response.json()).samples;
    assert.deepEqual(samples.map((s) => [s.kind, s.turns.length]), [["final", 3], [
      "subagent",
      2,
    ]]);
    const sub = samples[1];
    const thread = subagent.requests.find((r) => r.headers["x-codex-parent-thread-id"])!;
    assert.deepEqual(sub.lineage, {
      parent: samples[0].chain_id,
      dispatch: spawns[0].call_id,
      agent_id: thread.headers["thread-id"],
    });
    for (const segment of samples) {
      const calls = callsOfSample(gw.engine.calls, segment);
      assertChainExact(calls, [{ ...segment, kind: "final" }], segment.chain_id);
    }
  } finally {
    await gw.close();
  }
});

for (const api of ENGINE_APIS) {
  Deno.test(
    onEngine(
      "the recorded Codex episode replays as one token-exact chain, events and JSON recording the same tokens",
      api,
    ),
    async () => {
      const recorded: unknown[] = [];
      for (const stream of [true, false]) {
        const gw = await startGateway({
          script: episode.requests.map((request) => request.reply),
          env: engineEnv(api),
        });
        try {
          const { id, token } = await gw.openSession();
          for (const request of episode.requests) {
            const response = await gw.fetch(request.path, {
              method: request.method,
              headers: { ...request.headers, authorization: `Bearer ${token}` },
              body: JSON.stringify({ ...request.body, stream }),
            });
            const text = await response.text();
            assert.equal(response.status, 200, text);
            const usage = stream
              ? JSON.parse(text.trimEnd().split("\n").at(-1)!.slice("data: ".length)).response.usage
              : JSON.parse(text).usage;
            assert.equal(usage.input_tokens, gw.engine.calls.at(-1)!.inputIds.length);
          }
          const samples = await gw.samples(id);
          assertChainExact(
            gw.engine.calls,
            samples,
            `Codex replay (${stream ? "events" : "JSON"})`,
          );
          assert.equal((await gw.session(id)).chains.length, 1, "no fork");
          const [{ prompt_ids, response_ids, loss_mask, logprobs }] = samples;
          recorded.push({ prompt_ids, response_ids, loss_mask, logprobs });
        } finally {
          await gw.close();
        }
      }
      assert.deepEqual(recorded[1], recorded[0], "events and JSON record the same tokens");
    },
  );
}
