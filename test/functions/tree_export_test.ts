/**
 * `format=tree` over HTTP (`GET /sessions/:id/samples`): a Claude-Code-sized MoE episode with a
 * sub-agent and a compaction flattens back to its flat export, whole, every field; any two
 * samples share exactly the path their tokens, masks, logprobs and routed experts agree on (the
 * sub-agent nested under its parent's prefix as far as it shares one); episodes of equal ids
 * part where the engine routed them otherwise and where an image's bytes differ; the saving is
 * in the answer and on `/metrics`; bad queries are 400s naming the field; a group's page ends at
 * its token bound.
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { rowWidth } from "../../lib/engine/mod.ts";
import {
  flattenTree,
  type Sample,
  type SampleTree,
  sampleTree,
  treePath,
} from "../../lib/segment/mod.ts";
import {
  exportGroupSamples,
  GroupPage,
  pageTokenBound,
  SamplesQuery,
} from "../../functions/_samples.ts";
import { ADMIN_HEADERS, engineEnv, startGateway, type TestGateway } from "../_gateway.ts";
import { fetchRoutes, moeEpisode, TEST_MOE } from "../_moe_episode.ts";
import { grayPng, visionGateway } from "../_vision.ts";

/** `GET path` with the admin token, its JSON (200 expected). */
async function getJson<T>(gw: TestGateway, path: string): Promise<T> {
  const response = await gw.fetch(path, { headers: ADMIN_HEADERS });
  const text = await response.text();
  assert.equal(response.status, 200, text);
  return JSON.parse(text) as T;
}

/** A session's flat samples and its tree, side segments in. */
async function bothExports(gw: TestGateway, id: string) {
  const flat = await getJson<{ samples: Sample[] }>(
    gw,
    `/sessions/${id}/samples?include_side=true`,
  );
  const tree = await getJson<SampleTree & { dropped: unknown[] }>(
    gw,
    `/sessions/${id}/samples?format=tree&include_side=true`,
  );
  return { flat: flat.samples, tree };
}

/** Tokens the paths of leaves `a` and `b` share. */
function sharedPath(tree: SampleTree, a: number, b: number): number {
  const other = new Set(treePath(tree.nodes, tree.leaves[b].node).map((node) => node.id));
  return treePath(tree.nodes, tree.leaves[a].node)
    .filter((node) => other.has(node.id))
    .reduce((n, node) => n + node.tokens.length, 0);
}

/**
 * Positions two samples agree on from the start: the same id, mask and logprob, and the same
 * routed experts where both have a row (`rows`: each sample's `.npy` values, or none).
 */
function agreeing(
  a: Sample,
  b: Sample,
  rows: readonly [number[], number[]] | null,
  width: number,
): number {
  const tokens = (s: Sample) => [...s.prompt_ids, ...s.response_ids];
  const [x, y] = [tokens(a), tokens(b)];
  const at = (s: Sample, p: number, field: "loss_mask" | "logprobs") =>
    p < s.prompt_ids.length ? 0 : s[field][p - s.prompt_ids.length];
  let p = 0;
  for (; p < Math.min(x.length, y.length); p++) {
    if (x[p] !== y[p] || at(a, p, "loss_mask") !== at(b, p, "loss_mask")) break;
    if (at(a, p, "logprobs") !== at(b, p, "logprobs")) break;
    if (rows) {
      const [ra, rb] = rows.map((values) => values.slice(p * width, (p + 1) * width));
      const has = (row: number[]) => row.length === width && row[0] !== -1;
      if (has(ra) && has(rb) && ra.some((v, i) => v !== rb[i])) break;
    }
  }
  return p;
}

Deno.test("a MoE episode's tree flattens to its flat export, and two samples share what they agree on", async () => {
  const gw = await startGateway({ moe: TEST_MOE, env: engineEnv("sglang") });
  try {
    const { id, token } = await gw.openSession();
    await moeEpisode(gw, token);
    const { flat, tree } = await bothExports(gw, id);
    assert.deepEqual(flat.map((s) => s.kind), ["wipe", "subagent", "final"]);
    assert.deepEqual(flattenTree(tree), flat);
    assert.deepEqual(tree.dropped, []);
    const rows = await Promise.all(
      flat.map(async (s) => (await fetchRoutes(gw, s.routed_experts!.url)).values),
    );
    const width = rowWidth(TEST_MOE);
    for (let a = 0; a < flat.length; a++) {
      for (let b = a + 1; b < flat.length; b++) {
        assert.equal(
          sharedPath(tree, a, b),
          agreeing(flat[a], flat[b], [rows[a], rows[b]], width),
          `${flat[a].kind} and ${flat[b].kind}`,
        );
      }
    }
    // The compacted conversation starts again from the CLI's system prompt and tools: held once.
    const [wipe, sub, final] = [0, 1, 2];
    assert.ok(sharedPath(tree, wipe, final) > 9_000, "the system prompt and tools");
    assert.ok(sharedPath(tree, wipe, sub) > 0, "the sub-agent nests under its parent's prefix");
    const lengths = flat.map((s) => s.prompt_ids.length + s.response_ids.length);
    const flatTokens = lengths.reduce((a, b) => a + b, 0);
    assert.deepEqual(tree.stats, {
      nodes: tree.nodes.length,
      leaves: 3,
      tree_tokens: tree.nodes.reduce((n, node) => n + node.tokens.length, 0),
      flat_tokens: flatTokens,
      saved_tokens: flatTokens - tree.stats.tree_tokens,
    });
    assert.ok(tree.stats.saved_tokens >= sharedPath(tree, wipe, final));
    // Each node names rows that are its samples' own, position for position.
    for (const [i, leaf] of tree.leaves.entries()) {
      for (const node of treePath(tree.nodes, leaf.node)) {
        const named = node.routed_experts!;
        assert.equal(named.from, node.position);
        const source = rows[flat.findIndex((s) => s.routed_experts!.url === named.url)];
        const slice = (values: number[]) =>
          values.slice(node.position * width, (node.position + named.rows) * width);
        const own = slice(rows[i]).map((v, k) => v === -1 ? slice(source)[k] : v);
        assert.deepEqual(slice(source), own, `node ${node.id} for ${flat[i].kind}`);
      }
    }
    const metrics = await (await gw.fetch("/metrics", { headers: ADMIN_HEADERS })).text();
    assert.match(
      metrics,
      new RegExp(
        `rollout_gateway_tree_export_tokens_total\\{[^}]*counted="flat"\\} ${flatTokens}\\b`,
      ),
    );
    assert.match(
      metrics,
      new RegExp(
        `rollout_gateway_tree_export_tokens_total\\{[^}]*counted="tree"\\} ${tree.stats.tree_tokens}\\b`,
      ),
    );
  } finally {
    await gw.close();
  }
});

Deno.test("two episodes of equal ids part where the engine routed them otherwise", async () => {
  const gw = await startGateway({ moe: TEST_MOE, env: engineEnv("sglang") });
  try {
    const first = await gw.openSession();
    await moeEpisode(gw, first.token);
    // A restarted engine forwards the same prompt again, some rows routed otherwise.
    await gw.engine.kill();
    gw.engine.revive();
    const second = await gw.openSession();
    await moeEpisode(gw, second.token);
    const a = await bothExports(gw, first.id);
    const b = await bothExports(gw, second.id);
    const flat = [...a.flat, ...b.flat];
    // One tree of both: what the group route builds over two jobs.
    const samples = [a.flat[0], b.flat[0]];
    const ids = (s: Sample) => [...s.prompt_ids, ...s.response_ids];
    assert.deepEqual(ids(samples[1]), ids(samples[0]), "the same ids");
    const rows = await Promise.all(
      samples.map(async (s) => (await fetchRoutes(gw, s.routed_experts!.url)).values),
    );
    const width = rowWidth(TEST_MOE);
    const parted = agreeing(samples[0], samples[1], [rows[0], rows[1]], width);
    assert.ok(parted < ids(samples[0]).length - 1, "some row differs");
    // The group export's tree over both sessions (the rows read from the store) parts at that row.
    const jobs = [first.id, second.id].map((sessionId, i) => ({
      id: `job_${i}`,
      phase: "done",
      ended: true,
      sessionId,
    }));
    const both = await exportGroupSamples(
      gw.deps,
      jobs,
      SamplesQuery.parse({ format: "tree", include_side: "true" }),
      GroupPage.parse({}),
    ) as unknown as SampleTree;
    assert.deepEqual(flattenTree(both), flat);
    const [mainA, mainB] = [0, 3]; // each session's first sample
    assert.equal(sharedPath(both, mainA, mainB), parted);
    // The lib's tree of the two, from the rows served over HTTP, is the same.
    const alone = sampleTree(
      samples.map((sample, i) => ({ sample, routes: { values: rows[i], width } })),
    );
    assert.equal(sharedPath(alone, 0, 1), parted);
  } finally {
    await gw.close();
  }
});

Deno.test("two episodes of equal ids part at an image whose bytes differ", async () => {
  // Two gray squares of one grid (the same pads), of other bytes.
  const images = [grayPng(30, 30), grayPng(31, 31)];
  const { gw, padId, close } = await visionGateway(["A gray square.", "A gray square."]);
  try {
    const sessions = [];
    for (const png of images) {
      const { id, token } = await gw.openSession();
      await gw.anthropic(token).messages.create({
        model: "qwen3-vl",
        max_tokens: 64,
        messages: [{
          role: "user",
          content: [
            {
              type: "image",
              source: {
                type: "base64",
                media_type: "image/png",
                data: Buffer.from(png).toString("base64"),
              },
            },
            { type: "text", text: "What is this?" },
          ],
        }],
      });
      sessions.push(id);
    }
    const flat = await Promise.all(
      sessions.map(async (id) => (await bothExports(gw, id)).flat[0]),
    );
    const ids = (s: Sample) => [...s.prompt_ids, ...s.response_ids];
    assert.deepEqual(ids(flat[1]), ids(flat[0]), "the same ids, pads and all");
    assert.notEqual(flat[0].images![0].digest, flat[1].images![0].digest);
    const tree = sampleTree(flat.map((sample) => ({ sample })));
    const start = flat[0].images![0].start;
    assert.equal(ids(flat[0])[start], padId);
    assert.equal(sharedPath(tree, 0, 1), start, "they part at the image's first pad");
    assert.deepEqual(
      tree.nodes.filter((node) => node.images).map((node) => node.images!.map((i) => i.digest)),
      flat.map((s) => [s.images![0].digest]),
    );
    assert.deepEqual(flattenTree(tree), flat);
  } finally {
    await close();
  }
});

Deno.test("format=tree refuses what the samples route refuses, naming the field", async () => {
  const gw = await startGateway({});
  try {
    const { id, token } = await gw.openSession();
    for (
      const [query, field] of [
        ["format=trees", "format"],
        ["format=tree&max_segments=0", "max_segments"],
      ]
    ) {
      const response = await gw.fetch(`/sessions/${id}/samples?${query}`, {
        headers: ADMIN_HEADERS,
      });
      const body = await response.json();
      assert.equal(response.status, 400, JSON.stringify(body));
      assert.match(body.error.message, new RegExp(field));
    }
    // The session's own token is not the trainer's.
    const response = await gw.fetch(`/sessions/${id}/samples?format=tree`, {
      headers: { authorization: `Bearer ${token}` },
    });
    await response.body?.cancel();
    assert.equal(response.status, 403);
    const empty = await getJson<SampleTree>(gw, `/sessions/${id}/samples?format=tree`);
    assert.deepEqual(empty.stats, {
      nodes: 0,
      leaves: 0,
      tree_tokens: 0,
      flat_tokens: 0,
      saved_tokens: 0,
    });
  } finally {
    await gw.close();
  }
});

Deno.test("a group's page ends after the job that reaches its token bound, and the pages make the whole", async () => {
  const gw = await startGateway({ script: ["One.", "Two.", "Three."] });
  try {
    const jobs = [];
    for (const text of ["first", "second", "third"]) {
      const { id, token } = await gw.openSession();
      await gw.anthropic(token).messages.create({
        model: "m",
        max_tokens: 32,
        messages: [{ role: "user", content: `The ${text} task.` }],
      });
      jobs.push({ id: `job_${text}`, phase: "done", ended: true, sessionId: id });
    }
    const query = SamplesQuery.parse({ format: "tree" });
    const whole = await exportGroupSamples(gw.deps, jobs, query, GroupPage.parse({})) as unknown as
      & SampleTree
      & { next_cursor: string | null };
    assert.equal(whole.next_cursor, null);
    const leaves: unknown[] = [];
    const cursors: (string | null)[] = [];
    let cursor: string | undefined;
    do {
      // A bound of one token: every page ends after its first job.
      const page = await exportGroupSamples(
        gw.deps,
        jobs,
        query,
        GroupPage.parse(cursor === undefined ? {} : { cursor }),
        1,
      ) as unknown as SampleTree & { next_cursor: string | null; jobs: unknown[] };
      assert.equal(page.jobs.length, 1);
      leaves.push(...flattenTree(page));
      cursors.push(page.next_cursor);
      cursor = page.next_cursor ?? undefined;
    } while (cursor !== undefined);
    assert.deepEqual(cursors, ["1", "2", null]);
    assert.deepEqual(leaves, flattenTree(whole));
    assert.equal(whole.leaves.length, 3);
  } finally {
    await gw.close();
  }
});

Deno.test("a tree's page of routed experts ends at 256 MiB of rows, before a million tokens", () => {
  const qwen3 = { layers: 48, topK: 8, experts: 128, denseLayers: [] };
  // 48 × 8 ids of 2 bytes a token: 256 MiB / 768 bytes.
  assert.deepEqual(
    [
      pageTokenBound("tree", qwen3),
      pageTokenBound("samples", qwen3),
      pageTokenBound("tree", undefined),
      pageTokenBound("tree", TEST_MOE),
    ],
    [349_525, 1_000_000, 1_000_000, 1_000_000],
  );
});
