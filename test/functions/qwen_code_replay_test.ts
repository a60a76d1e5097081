/**
 * Replays the requests the real Qwen Code CLI sent (fixtures/qwen_code/episode.json, made by
 * fixtures/qwen_code/record.ts) without the CLI: every field and header is accounted for, and the
 * episode, echoed exactly as the CLI echoed it (its reasoning twice, `content: ""` beside calls,
 * tool-call ids from another gateway run), records as one token-exact chain.
 */
import assert from "node:assert/strict";
import { unaccountedChat } from "../../lib/openai/mod.ts";
import type { RecordedChatEpisode } from "../../fixtures/qwen_code/record.ts";
import { assertChainExact } from "../_chain_exact.ts";
import { startGateway } from "../_gateway.ts";
import { assertFieldsAccounted, readRecorded } from "../_recorded.ts";

const REPO = "/tmp/replayed-repo";
const episode = await readRecorded<RecordedChatEpisode>(
  new URL("../../fixtures/qwen_code/episode.json", import.meta.url),
  REPO,
);

Deno.test("every field and header Qwen Code sends is used or deliberately ignored", () => {
  assert.ok(episode.requests.length >= 3);
  assertFieldsAccounted(episode.requests, unaccountedChat, ["parameters"]);
});

Deno.test("the recorded Qwen Code episode replays as one token-exact chain, in its own echoes", async () => {
  const gw = await startGateway({ script: episode.requests.map((request) => request.reply) });
  try {
    const { id, token } = await gw.openSession();
    for (const request of episode.requests) {
      const response = await gw.fetch(request.path, {
        method: request.method,
        headers: { ...request.headers, authorization: `Bearer ${token}` },
        body: JSON.stringify(request.body),
      });
      const text = await response.text();
      assert.equal(response.status, 200, text);
      assert.ok(text.trimEnd().endsWith("data: [DONE]"), "a complete chunk stream");
      const usage = JSON.parse(text.trimEnd().split("\n\n").at(-2)!.slice("data: ".length)).usage;
      assert.equal(usage.prompt_tokens, gw.engine.calls.at(-1)!.inputIds.length);
    }
    assertChainExact(gw.engine.calls, await gw.samples(id), "Qwen Code replay");
    assert.equal((await gw.session(id)).chains.length, 1, "no fork");
  } finally {
    await gw.close();
  }
});
