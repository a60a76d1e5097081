/**
 * The Python client's routed experts (python/rollout_gateway.py `routed_experts`) against a
 * gateway recording them: a MoE episode is run over HTTP, then test/python/routes_check.py reads
 * every sample's rows in slime's and verl's layouts, standard library only, and compares them
 * with what the engine reported, whole arrays.
 */
import assert from "node:assert/strict";
import { ADMIN_TOKEN, type SampleJson, startGateway } from "../_gateway.ts";
import { expectedRows, exported, moeEpisode, TEST_MOE } from "../_moe_episode.ts";

Deno.test("the Python client reads a sample's routed experts as the engine reported them", async () => {
  const gw = await startGateway({ moe: TEST_MOE });
  const dir = await Deno.makeTempDir({ prefix: "rg-routes-" });
  try {
    const { id, token } = await gw.openSession();
    await moeEpisode(gw, token);
    const expected: Record<string, number[]> = {};
    for (const sample of await exported(gw, id) as unknown as SampleJson[]) {
      const tokens = sample.prompt_ids.length + sample.response_ids.length;
      expected[sample.chain_id] = expectedRows(gw.engine.calls, sample, tokens - 1, TEST_MOE);
    }
    await Deno.writeTextFile(`${dir}/expected.json`, JSON.stringify(expected));
    const output = await new Deno.Command("python3", {
      args: ["-m", "unittest", "routes_check", "-v"],
      cwd: new URL("./", import.meta.url),
      env: {
        GATEWAY_URL: gw.url,
        ADMIN_TOKEN,
        SESSION_ID: id,
        EXPECTED: `${dir}/expected.json`,
        PYTHONPATH: new URL("../../python", import.meta.url).pathname,
        PYTHONDONTWRITEBYTECODE: "1",
      },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const text = new TextDecoder().decode(output.stdout) + new TextDecoder().decode(output.stderr);
    assert.equal(output.code, 0, text);
    assert.match(text, /Ran 2 tests/);
  } finally {
    await gw.close();
    await Deno.remove(dir, { recursive: true });
  }
});
