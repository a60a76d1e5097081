/**
 * Replays the requests the real Qwen Code CLI sent (fixtures/qwen_code/, made by
 * fixtures/qwen_code/record.ts) without the CLI: every field and header is accounted for; the
 * tool episode, echoed exactly as the CLI echoed it (its reasoning twice, `content: ""` beside
 * calls, tool-call ids from another gateway run), records as one token-exact chain; and the
 * one-answer episode's memory extractor, which re-sends the agent's conversation under its own
 * system prompt and tools, records as a side chain beside the agent's final one.
 */
import assert from "node:assert/strict";
import { unaccountedChat } from "../../lib/openai/mod.ts";
import type { RecordedChatEpisode } from "../../fixtures/qwen_code/record.ts";
import { assertChainExact, callsOfSample } from "../_chain_exact.ts";
import {
  ADMIN_HEADERS,
  ENGINE_APIS,
  engineEnv,
  onEngine,
  type SampleJson,
  startGateway,
  type TestGateway,
} from "../_gateway.ts";
import { assertFieldsAccounted, readRecorded } from "../_recorded.ts";

const REPO = "/tmp/replayed-repo";
const episode = await readRecorded<RecordedChatEpisode>(
  new URL("../../fixtures/qwen_code/episode.json", import.meta.url),
  REPO,
);
const oneAnswer = await readRecorded<RecordedChatEpisode>(
  new URL("../../fixtures/qwen_code/one_answer.json", import.meta.url),
  REPO,
);

Deno.test("every field and header Qwen Code sends is used or deliberately ignored, its memory extractor's too", () => {
  assert.ok(episode.requests.length >= 3);
  assert.match(oneAnswer.requests[1].body.messages[0].content as string, /memory extraction/);
  assertFieldsAccounted(
    [...episode.requests, ...oneAnswer.requests],
    unaccountedChat,
    ["parameters"],
  );
});

/**
 * Sends the recorded requests in order (the engine answers each with the reply it got when
 * recorded); `check` reads each response's body.
 */
async function replay(
  gw: TestGateway,
  token: string,
  recorded: RecordedChatEpisode,
  check: (text: string) => void = () => {},
) {
  for (const request of recorded.requests) {
    const response = await gw.fetch(request.path, {
      method: request.method,
      headers: { ...request.headers, authorization: `Bearer ${token}` },
      body: JSON.stringify(request.body),
    });
    const text = await response.text();
    assert.equal(response.status, 200, text);
    check(text);
  }
}

Deno.test("the recorded one-answer episode replays as the agent's final chain and the memory extractor's side chain", async () => {
  const gw = await startGateway({ script: oneAnswer.requests.map((request) => request.reply) });
  try {
    const { id, token } = await gw.openSession();
    await replay(gw, token, oneAnswer);
    const response = await gw.fetch(`/sessions/${id}/samples?include_side=true`, {
      headers: ADMIN_HEADERS,
    });
    const all: SampleJson[] = (await response.json()).samples;
    assert.deepEqual(all.map((s) => [s.kind, s.turns.length]), [["final", 1], ["side", 2]]);
    assert.deepEqual(callsOfSample(gw.engine.calls, all[0]), gw.engine.calls.slice(0, 1));
    assertChainExact(gw.engine.calls.slice(0, 1), [all[0]], "the agent");
    assertChainExact(gw.engine.calls.slice(1), [{ ...all[1], kind: "final" }], "the extractor");
  } finally {
    await gw.close();
  }
});

for (const api of ENGINE_APIS) {
  Deno.test(
    onEngine(
      "the recorded Qwen Code episode replays as one token-exact chain, in its own echoes",
      api,
    ),
    async () => {
      const gw = await startGateway({
        script: episode.requests.map((request) => request.reply),
        env: engineEnv(api),
      });
      try {
        const { id, token } = await gw.openSession();
        await replay(gw, token, episode, (text) => {
          assert.ok(text.trimEnd().endsWith("data: [DONE]"), "a complete chunk stream");
          const usage =
            JSON.parse(text.trimEnd().split("\n\n").at(-2)!.slice("data: ".length)).usage;
          assert.equal(usage.prompt_tokens, gw.engine.calls.at(-1)!.inputIds.length);
        });
        assertChainExact(gw.engine.calls, await gw.samples(id), "Qwen Code replay");
        assert.equal((await gw.session(id)).chains.length, 1, "no fork");
      } finally {
        await gw.close();
      }
    },
  );
}
