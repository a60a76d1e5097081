/**
 * A Harbor group's work tree travels in the store: submitted on one host (its `environment/`
 * built in that host's cache), unpacked on another from the store alone, the same commit; a
 * group that keeps no such tree is refused as the repository's failure.
 */
import assert from "node:assert/strict";
import {
  getRolloutGroup,
  readRolloutTask,
  resolveHarborRollout,
  RolloutRequestSchema,
  submitGroup,
  withLocalTree,
} from "../../lib/rollout/mod.ts";
import { type Task, treeRepo } from "../../lib/evaluate/mod.ts";
import { hostCommand, RepoError } from "../../lib/sandbox/mod.ts";
import type { Store } from "../../lib/kv/mod.ts";
import { harborFixture } from "../evaluate/_harbor.ts";

/** `kv` with its reads counted. */
function counted(kv: Deno.Kv): { store: Store; reads: () => number } {
  let reads = 0;
  const store = new Proxy(kv, {
    get(target, name) {
      const value = Reflect.get(target, name);
      if (typeof value !== "function") return value;
      return (...args: unknown[]) => {
        if (name === "get" || name === "getMany" || name === "list") reads++;
        return value.apply(target, args);
      };
    },
  }) as unknown as Store;
  return { store, reads: () => reads };
}

Deno.test("a Harbor group's work tree is unpacked on another host from the store alone: the same commit and files", async () => {
  const submitter = await Deno.makeTempDir();
  const runner = await Deno.makeTempDir();
  const kv = await Deno.openKv(":memory:");
  try {
    const harbor = harborFixture("fizzbuzz");
    const resolved = await resolveHarborRollout(
      { task: { harbor }, n: 2 },
      { harbor },
      { cacheDir: submitter, runsImages: false },
    );
    const body = RolloutRequestSchema.parse(resolved.body);
    const built = resolved.environment!;
    const { groupId } = await submitGroup(kv, body, { environment: built });

    // The stored task names the tree, not the submitting host's folder.
    const group = (await getRolloutGroup(kv, groupId))!;
    const task = await readRolloutTask<Task>(kv, group);
    assert.equal(task.repo, treeRepo(built.digest));
    assert.equal(group.tree!.digest, built.digest);
    assert.equal(group.tree!.commit, task.base_commit);

    // The submitting host's folder gone, another host unpacks it from the store.
    await Deno.remove(submitter, { recursive: true });
    const { store, reads } = counted(kv);
    const local = await withLocalTree(store, groupId, task, runner);
    assert.deepEqual(local, { ...task, repo: `${runner}/harbor/${built.digest}` });
    const head = (await hostCommand("git", ["-C", local.repo!, "rev-parse", "HEAD"])).trim();
    assert.equal(head, task.base_commit);
    assert.equal(
      await Deno.readTextFile(`${local.repo}/fizzbuzz.py`),
      await Deno.readTextFile(`${harbor}/environment/fizzbuzz.py`),
    );
    // Unpacked once: a later attempt on this host reads nothing from the store.
    const before = reads();
    assert.ok(before > 0);
    const [again, twice] = await Promise.all([
      withLocalTree(store, groupId, task, runner),
      withLocalTree(store, groupId, task, runner),
    ]);
    assert.deepEqual([again, twice], [local, local]);
    assert.equal(reads(), before);
  } finally {
    kv.close();
    await Deno.remove(submitter, { recursive: true }).catch(() => {});
    await Deno.remove(runner, { recursive: true });
  }
});

Deno.test("withLocalTree() leaves any other repository as it is, and refuses a tree its group does not keep", async () => {
  const runner = await Deno.makeTempDir();
  const kv = await Deno.openKv(":memory:");
  try {
    const task = { repo: "fixture:python_unittest", base_commit: "HEAD" } as Task;
    assert.equal(await withLocalTree(kv, "grp_x", task, runner), task);
    const body = RolloutRequestSchema.parse({
      task: { repo: "/srv/repo", base_commit: "abc1234", eval_cmd: "true" },
    });
    const { groupId } = await submitGroup(kv, body);
    const named = { ...task, repo: treeRepo("e".repeat(32)) };
    await assert.rejects(withLocalTree(kv, groupId, named, runner), {
      name: "RepoError",
      message: `Rollout group "${groupId}" keeps no work tree ${"e".repeat(32)}`,
    });
    await assert.rejects(withLocalTree(kv, "grp_gone", named, runner), RepoError);
  } finally {
    kv.close();
    await Deno.remove(runner, { recursive: true });
  }
});
