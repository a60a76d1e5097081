/**
 * The real Qwen Code CLI (pinned in tools/qwen-code), headless and offline, through the gateway
 * and the scripted engine: it writes a file and runs a command in a temporary git repository,
 * and every turn of its main conversation is recorded token for token.
 */
import assert from "node:assert/strict";
import { assertChainExact, callsOfSample } from "../_chain_exact.ts";
import { tempRepo } from "../_claude.ts";
import { startGateway } from "../_gateway.ts";
import { runQwen } from "../_qwen.ts";
import { episodeScript, MEMORY_REPLY, PROMPT } from "../../fixtures/qwen_code/episode.ts";

for (const perSession of [false, true]) {
  Deno.test(
    `Qwen Code edits a file through the gateway, every turn token-exact (${
      perSession ? "token in the base URL" : "token as the API key"
    })`,
    async () => {
      const repo = await tempRepo();
      const gw = await startGateway({ script: episodeScript(repo) });
      try {
        const { id, token } = await gw.openSession({ agent: "qwen_code" });
        const run = await runQwen({
          baseUrl: perSession ? `${gw.url}/sessions/${token}/v1` : `${gw.url}/v1`,
          apiKey: perSession ? "unused" : token,
          cwd: repo,
          prompt: PROMPT,
        });
        assert.equal(run.code, 0, run.stderr);
        assert.equal(run.result?.result, "Created hello.txt; it contains: hello");
        assert.equal(await Deno.readTextFile(`${repo}/hello.txt`), "hello\n");
        const turns = gw.exchanges.filter((e) => e.path.endsWith("/v1/chat/completions"));
        assert.ok(turns.every((e) => e.status === 200), turns.map((e) => e.status).join(","));
        const samples = await gw.samples(id);
        const main = samples.filter((sample) => sample.kind === "final");
        assert.equal(main.length, 1);
        const mainCalls = callsOfSample(gw.engine.calls, main[0]);
        assert.equal(mainCalls.length, 3, "three main turns: write, shell, answer");
        assertChainExact(mainCalls, main, "main conversation");
        // The CLI's memory extractor is a side conversation of its own.
        const side = gw.engine.calls.filter((call) => !mainCalls.includes(call));
        for (const call of side) {
          assert.equal(gw.tokenizer.decode(call.output!), `${MEMORY_REPLY}<|im_end|>`);
        }
      } finally {
        await gw.close();
        await Deno.remove(repo, { recursive: true });
      }
    },
  );
}
