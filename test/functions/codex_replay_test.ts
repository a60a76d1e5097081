/**
 * Replays the requests the real Codex CLI sent (fixtures/codex/episode.json, made by
 * fixtures/codex/record.ts) without the CLI: every field and header is accounted for, and the
 * episode, echoed exactly as the CLI echoed it (reasoning items with their encrypted content, call
 * ids and item ids from another gateway run), records as one token-exact chain, streamed or not.
 */
import assert from "node:assert/strict";
import { unaccountedResponses } from "../../lib/responses/mod.ts";
import type { RecordedResponsesEpisode } from "../../fixtures/codex/record.ts";
import { assertChainExact } from "../_chain_exact.ts";
import { startGateway } from "../_gateway.ts";
import { assertFieldsAccounted, readRecorded } from "../_recorded.ts";

const REPO = "/tmp/replayed-repo";
const episode = await readRecorded<RecordedResponsesEpisode>(
  new URL("../../fixtures/codex/episode.json", import.meta.url),
  REPO,
);

Deno.test("every field and header Codex sends is used or deliberately ignored", () => {
  assert.ok(episode.requests.length >= 3);
  assertFieldsAccounted(episode.requests, unaccountedResponses, ["parameters"]);
});

Deno.test("the recorded Codex episode replays as one token-exact chain, events and JSON recording the same tokens", async () => {
  const recorded: unknown[] = [];
  for (const stream of [true, false]) {
    const gw = await startGateway({ script: episode.requests.map((request) => request.reply) });
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
      assertChainExact(gw.engine.calls, samples, `Codex replay (${stream ? "events" : "JSON"})`);
      assert.equal((await gw.session(id)).chains.length, 1, "no fork");
      const [{ prompt_ids, response_ids, loss_mask, logprobs }] = samples;
      recorded.push({ prompt_ids, response_ids, loss_mask, logprobs });
    } finally {
      await gw.close();
    }
  }
  assert.deepEqual(recorded[1], recorded[0], "events and JSON record the same tokens");
});
