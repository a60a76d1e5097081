/**
 * A group's samples in one answer, `GET /rollout/groups/:group_id/samples`: eight Claude Code
 * episodes of one task (the real CLI in bubblewrap, the scripted engine as the model) exported
 * flat and as one prefix tree: the tree flattens to the flat export, whole, and the prefix the
 * eight share (the CLI's system prompt, tools and the task) is held once; pages put together are
 * the whole; a group still queued is `partial`; bad ids and cursors are 4xx naming the field.
 */
import assert from "node:assert/strict";
import { flattenTree, type Sample, type SampleTree, treePath } from "../../lib/segment/mod.ts";
import { ADMIN_HEADERS, startGateway, type TestGateway } from "../_gateway.ts";
import { fixtureTask } from "../evaluate/_tasks.ts";
import { awaitJob, FIX_CALC, oneCommand, submit } from "./_rollout.ts";

/** `GET path` with the admin token: its status and JSON. */
async function get(gw: TestGateway, path: string) {
  const response = await fetch(`${gw.url}${path}`, { headers: ADMIN_HEADERS });
  return { status: response.status, body: await response.json() };
}

/** The positions every sample agrees on from the start: the ids, masks and logprobs. */
function commonPrefix(samples: readonly Sample[]): number {
  const tokens = samples.map((s) => [...s.prompt_ids, ...s.response_ids]);
  const fact = (s: Sample, p: number, field: "loss_mask" | "logprobs") =>
    p < s.prompt_ids.length ? 0 : s[field][p - s.prompt_ids.length];
  let p = 0;
  while (
    tokens.every((t) => p < t.length && t[p] === tokens[0][p]) &&
    samples.every((s) => fact(s, p, "loss_mask") === fact(samples[0], p, "loss_mask")) &&
    samples.every((s) => fact(s, p, "logprobs") === fact(samples[0], p, "logprobs"))
  ) p++;
  return p;
}

Deno.test("a group of eight Claude Code episodes as one prefix tree: lossless, the shared prefix once", async () => {
  const gw = await startGateway({
    script: oneCommand(FIX_CALC, "Done: true division."),
    worker: true,
    env: { ROLLOUT_CONCURRENCY: "4", ROLLOUT_BOOT_CONCURRENCY: "4" },
  });
  try {
    const { task } = await fixtureTask("python_unittest");
    const submitted = await submit(gw, { task, n: 8 });
    const views = await Promise.all(submitted.jobs.map(({ id }) => awaitJob(gw, id)));
    assert.deepEqual(
      views.map((v) => [v.phase, v.result.reward.score]),
      Array(8).fill(["done", 1]),
    );
    const base = `/rollout/groups/${submitted.group_id}/samples`;
    const flat = await get(gw, base);
    assert.equal(flat.status, 200, JSON.stringify(flat.body));
    assert.deepEqual(
      [flat.body.group_id, flat.body.partial, flat.body.next_cursor],
      [submitted.group_id, false, null],
    );
    assert.deepEqual(
      flat.body.jobs.map((j: { id: string; exported: boolean }) => [j.id, j.exported]),
      submitted.jobs.map((j) => [j.id, true]),
    );
    const samples = flat.body.samples as Sample[];
    // Each job's samples are its own export, in the group's order.
    const own: Sample[] = [];
    for (const view of views) {
      own.push(...(await get(gw, `/sessions/${view.session_id}/samples`)).body.samples);
    }
    assert.deepEqual(samples, own);
    const tree = (await get(gw, `${base}?format=tree`)).body as SampleTree & { partial: boolean };
    assert.equal(tree.partial, false);
    assert.deepEqual(flattenTree(tree), samples);
    // The eight main samples' shared prefix is one path of the tree, held once.
    const mains = samples.flatMap((s, i) => s.kind === "final" ? [i] : []);
    assert.ok(mains.length >= 8, JSON.stringify(samples.map((s) => s.kind)));
    const shared = commonPrefix(mains.map((i) => samples[i]));
    assert.ok(shared > 9_000, `the CLI's system prompt, tools and the task: ${shared}`);
    const paths = mains.map((i) => new Set(treePath(tree.nodes, tree.leaves[i].node)));
    const common = tree.nodes.filter((node) => paths.every((path) => path.has(node)));
    assert.equal(common.reduce((n, node) => n + node.tokens.length, 0), shared);
    assert.ok(tree.stats.saved_tokens >= (mains.length - 1) * shared);
    assert.equal(
      tree.stats.flat_tokens,
      samples.reduce((n, s) => n + s.prompt_ids.length + s.response_ids.length, 0),
    );
    // Pages of three jobs put together are the whole.
    const paged: Sample[] = [];
    let cursor: string | null = "";
    let pages = 0;
    while (cursor !== null) {
      const page = await get(gw, `${base}?limit=3${cursor ? `&cursor=${cursor}` : ""}`);
      assert.equal(page.status, 200, JSON.stringify(page.body));
      assert.ok(page.body.jobs.length <= 3);
      paged.push(...page.body.samples);
      cursor = page.body.next_cursor;
      pages++;
    }
    assert.deepEqual([pages, paged], [3, samples]);
    const raw = await get(gw, `${base}?format=raw`);
    assert.deepEqual(
      raw.body.sessions.map((s: { session: { id: string } }) => s.session.id),
      views.map((v) => v.session_id),
    );
  } finally {
    await gw.close();
  }
});

Deno.test("a group still queued is partial; unknown groups, bad ids, cursors and limits are 4xx", async () => {
  const gw = await startGateway({ script: oneCommand(FIX_CALC) }); // no worker: the jobs wait
  try {
    const { task } = await fixtureTask("python_unittest");
    const submitted = await submit(gw, { task, n: 2 });
    const base = `/rollout/groups/${submitted.group_id}/samples`;
    const queued = await get(gw, `${base}?format=tree`);
    assert.equal(queued.status, 200, JSON.stringify(queued.body));
    assert.deepEqual(
      [queued.body.partial, queued.body.jobs.map((j: { exported: boolean }) => j.exported)],
      [true, [false, false]],
    );
    assert.deepEqual([queued.body.nodes, queued.body.leaves], [[], []]);
    const refused = [
      [`/rollout/groups/grp_${"0".repeat(24)}/samples`, 404, "grp_"],
      ["/rollout/groups/grp_nope/samples", 400, "group_id"],
      [`${base}?cursor=x`, 400, "cursor"],
      [`${base}?cursor=3`, 400, "cursor"],
      [`${base}?limit=0`, 400, "limit"],
      [`${base}?limit=65`, 400, "limit"],
      [`${base}?format=nope`, 400, "format"],
      [`${base}?sort=asc`, 400, "sort"],
    ] as const;
    for (const [path, status, named] of refused) {
      const { status: got, body } = await get(gw, path);
      assert.equal(got, status, `${path}: ${JSON.stringify(body)}`);
      assert.match(body.error.message, new RegExp(named), path);
    }
    const session = await gw.openSession();
    const response = await fetch(`${gw.url}${base}`, {
      headers: { authorization: `Bearer ${session.token}` },
    });
    await response.body?.cancel();
    assert.equal(response.status, 403, "a session's token is not the trainer's");
  } finally {
    await gw.close();
  }
});
