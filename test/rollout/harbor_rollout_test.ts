import assert from "node:assert/strict";
import { resolveHarborRollout, RolloutRequestSchema } from "../../lib/rollout/mod.ts";

const HARBOR = new URL("../../fixtures/harbor/fizzbuzz", import.meta.url).pathname;

Deno.test("resolveHarborRollout() holds the task, its timeout the agent's budget unless one is given", async () => {
  const cacheDir = await Deno.makeTempDir();
  try {
    const options = { cacheDir, runsImages: false };
    const raw = { task: { harbor: HARBOR }, n: 2 };
    const { body: resolved, environment } = await resolveHarborRollout(
      raw,
      { harbor: HARBOR },
      options,
    );
    assert.deepEqual(Object.keys(resolved), ["task", "n", "budgets"]);
    // The work tree built here from environment/, by the digest of its files.
    assert.match(environment!.digest, /^[0-9a-f]{32}$/);
    assert.equal(environment!.path, `${cacheDir}/harbor/${environment!.digest}`);
    assert.equal((resolved.task as { repo: string }).repo, environment!.path);
    assert.deepEqual(resolved.budgets, { agent_ms: 120_000 });
    const body = RolloutRequestSchema.parse(resolved);
    assert.ok(!("harbor" in body.task));
    assert.equal(body.n, 2);

    const { body: given } = await resolveHarborRollout(
      { ...raw, budgets: { agent_ms: 5000, margin_ms: 0 } },
      { harbor: HARBOR },
      options,
    );
    assert.deepEqual(given.budgets, { agent_ms: 5000, margin_ms: 0 });
  } finally {
    await Deno.remove(cacheDir, { recursive: true });
  }
});
