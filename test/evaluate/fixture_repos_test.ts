import assert from "node:assert/strict";
import { FIXTURE_TASKS_DIR, fixtureRepo } from "../../lib/evaluate/mod.ts";
import { hostCommand, RepoError } from "../../lib/sandbox/mod.ts";

Deno.test("fixtureRepo() builds each fixture at the commit its task.json names", async () => {
  const cache = await Deno.makeTempDir();
  try {
    for await (const entry of Deno.readDir(FIXTURE_TASKS_DIR)) {
      const task = JSON.parse(
        await Deno.readTextFile(`${FIXTURE_TASKS_DIR}${entry.name}/task.json`),
      );
      const path = await fixtureRepo(entry.name, cache);
      const head = (await hostCommand("git", ["-C", path, "rev-parse", "HEAD"])).trim();
      assert.equal(head, task.base_commit, entry.name);
      assert.equal(await hostCommand("git", ["-C", path, "status", "--porcelain"]), "");
      // A second call, in this process or after a restart, finds the same repository.
      assert.equal(await fixtureRepo(entry.name, cache), path);
    }
  } finally {
    await Deno.remove(cache, { recursive: true });
  }
});

Deno.test("fixtureRepo() names a fixture that does not exist", async () => {
  const cache = await Deno.makeTempDir();
  try {
    await assert.rejects(fixtureRepo("no_such_task", cache), (error: Error) => {
      assert.ok(error instanceof RepoError);
      assert.match(error.message, /Unknown fixture "no_such_task"/);
      return true;
    });
  } finally {
    await Deno.remove(cache, { recursive: true });
  }
});
