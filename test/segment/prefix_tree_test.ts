/**
 * The prefix tree of samples (`lib/segment/prefix_tree.ts`) against the plain path: samples built
 * to fool it (equal ids with another mask, logprob, weight version, version span, image or routed
 * experts; samples ending inside others; copies; rows no engine forwarded) flatten back to
 * themselves whole, and the tree holds exactly the tokens of a position-by-position trie.
 */
import assert from "node:assert/strict";
import {
  flattenTree,
  type RouteRows,
  type Sample,
  sampleTree,
  type TreeInput,
  type TreeNode,
  treePath,
} from "../../lib/segment/mod.ts";
import { random } from "../_random.ts";

/** A run of an episode's tokens: the first prompt, a sampled turn, a delta or an image's pads. */
type Piece =
  | { kind: "prompt" | "delta"; tokens: number[] }
  | { kind: "out"; tokens: number[]; logprobs: number[]; version: string; masked: boolean }
  | { kind: "image"; tokens: number[]; digest: string };

const WIDTH = 2; // one MoE layer, top-2

/** The sample of `pieces` in session `session`, with routes salted by `salt` from `saltFrom`. */
function build(
  pieces: readonly Piece[],
  session: string,
  index: number,
  routes: { salt: number; saltFrom: number; missing: readonly number[] } | null,
): TreeInput {
  const [prompt, ...rest] = pieces;
  const prompt_ids = [...prompt.tokens];
  const response_ids: number[] = [];
  const loss_mask: number[] = [];
  const logprobs: number[] = [];
  const version_spans: { version: string; start: number; end: number }[] = [];
  const turns: Sample["turns"] = [];
  const images: NonNullable<Sample["images"]> = [];
  for (const piece of rest) {
    const start = response_ids.length;
    const at = prompt_ids.length + start;
    response_ids.push(...piece.tokens);
    if (piece.kind === "out") {
      loss_mask.push(...piece.tokens.map(() => piece.masked ? 0 : 1));
      logprobs.push(...piece.logprobs);
      version_spans.push({ version: piece.version, start, end: start + piece.tokens.length });
      turns.push({
        input_len: at,
        output_len: piece.tokens.length,
        finish_reason: "stop",
        flags: [],
        weight_versions: [piece.version],
      });
    } else {
      loss_mask.push(...piece.tokens.map(() => 0));
      logprobs.push(...piece.tokens.map(() => 0));
      if (piece.kind === "image") {
        images.push({
          digest: piece.digest,
          media_type: "image/png",
          width: 28,
          height: 28,
          bytes: 90,
          start: at,
          length: piece.tokens.length,
          url: `/sessions/${session}/images/${piece.digest}`,
        });
      }
    }
  }
  const length = prompt_ids.length + response_ids.length;
  const chain = `ch_${session}_${index}`;
  const sample = {
    session_id: session,
    kind: index === 0 ? "main" : "subagent",
    chain_id: chain,
    rollout_id: session,
    group_id: "grp",
    segment_index: index,
    lineage: { parent: null, dispatch: null, agent_id: null },
    stats: { turns: turns.length },
    masked: null,
    stale_tokens: 0,
    prompt_ids,
    response_ids,
    loss_mask,
    logprobs,
    version_spans,
    reward: index === 0 ? 1 : 0.5,
    turns,
    ...(images.length > 0 ? { images } : {}),
    ...(routes
      ? {
        routed_experts: {
          url: `/sessions/${session}/routes/${chain}`,
          shape: [length - 1, 1, WIDTH],
          dtype: "int16",
          layout: "slime",
          missing_rows: routes.missing.length,
          mismatched_turns: 0,
        },
      }
      : {}),
  } as unknown as Sample;
  if (!routes) return { sample };
  const tokens = [...prompt_ids, ...response_ids];
  const values = new Int16Array(Math.max(0, length - 1) * WIDTH);
  for (let p = 0; p < length - 1; p++) {
    const salt = p >= routes.saltFrom ? routes.salt : 0;
    values[p * WIDTH] = (tokens[p] * 7 + p + salt) % 64;
    values[p * WIDTH + 1] = (tokens[p] * 13 + 3 * p + salt) % 64;
  }
  for (const p of routes.missing) if (p < length - 1) values.fill(-1, p * WIDTH, (p + 1) * WIDTH);
  return { sample, routes: { values, width: WIDTH } };
}

/** An episode of `turns` turns after a shared prompt. */
function episode(next: () => number, prompt: number[], turns: number): Piece[] {
  const token = () => 10 + Math.floor(next() * 6); // few ids: equal ids by chance are common
  const run = (n: number) => Array.from({ length: n }, token);
  const pieces: Piece[] = [{ kind: "prompt", tokens: [...prompt] }];
  for (let t = 0; t < turns; t++) {
    const n = 1 + Math.floor(next() * 5);
    pieces.push({
      kind: "out",
      tokens: run(n),
      logprobs: Array.from({ length: n }, () => -Math.round(next() * 8) / 4),
      version: String(1 + Math.floor(t / 2)),
      masked: false,
    });
    if (next() < 0.3) pieces.push({ kind: "image", tokens: [99, 99, 99], digest: "a".repeat(64) });
    pieces.push({ kind: "delta", tokens: run(1 + Math.floor(next() * 3)) });
  }
  return pieces;
}

/** A copy of `pieces` with one thing changed somewhere after `keep` pieces, the ids kept. */
function fool(next: () => number, pieces: readonly Piece[], keep: number): Piece[] {
  const copy: Piece[] = structuredClone(pieces.slice(0, keep + 1 + Math.floor(next() * 4)));
  const outs = copy.map((piece, i) => [piece, i] as const).filter(([p, i]) =>
    p.kind === "out" && i > keep
  );
  const images = copy.filter((p) => p.kind === "image");
  const way = Math.floor(next() * 6);
  if (outs.length > 0) {
    const [out, i] = outs[Math.floor(next() * outs.length)] as [
      Extract<Piece, { kind: "out" }>,
      number,
    ];
    const k = Math.floor(next() * out.tokens.length);
    if (way === 0) out.masked = true; // sampled, not trained on: its logprob stays
    else if (way === 1) out.logprobs[k] -= 0.125;
    else if (way === 2) out.version = `${out.version}0`;
    else if (way === 3 && out.tokens.length > 1) {
      // The same tokens, versions and logprobs as two turns: a span opens inside.
      const cut = 1 + Math.floor(next() * (out.tokens.length - 1));
      copy.splice(i, 1, {
        ...out,
        tokens: out.tokens.slice(0, cut),
        logprobs: out.logprobs.slice(0, cut),
      }, {
        ...out,
        tokens: out.tokens.slice(cut),
        logprobs: out.logprobs.slice(cut),
      });
    } else if (way === 4 && images.length > 0) {
      (images[Math.floor(next() * images.length)] as { digest: string }).digest = "b".repeat(64);
    } else out.tokens[k] = 10 + ((out.tokens[k] - 9) % 6);
  }
  return copy;
}

/** The cases: groups of episodes of one prompt, each with copies built to fool the tree. */
function cases(seed: number): TreeInput[] {
  const next = random(seed);
  const prompt = Array.from({ length: 6 + Math.floor(next() * 6) }, (_, i) => i + 1);
  const inputs: TreeInput[] = [];
  const withRoutes = next() < 0.6;
  const count = 2 + Math.floor(next() * 6);
  const firsts: Piece[][] = [];
  for (let e = 0; e < count; e++) {
    const session = `s${e}`;
    // Most episodes are another's with one thing changed, the ids kept up to there.
    const pieces = e > 0 && next() < 0.7
      ? fool(next, firsts[Math.floor(next() * firsts.length)], Math.floor(next() * 3))
      : episode(next, prompt, 1 + Math.floor(next() * 5));
    firsts.push(pieces);
    const length = pieces.reduce((n, piece) => n + piece.tokens.length, 0);
    const routes = withRoutes
      ? {
        salt: next() < 0.3 ? 1 + Math.floor(next() * 5) : 0,
        saltFrom: Math.floor(next() * length),
        missing: next() < 0.3 ? [Math.floor(next() * length)] : [],
      }
      : null;
    inputs.push(build(pieces, session, 0, routes));
    // A sub-agent re-sends part of its parent's prefix, or a copy ends inside another.
    if (next() < 0.4) {
      const cut = 1 + Math.floor(next() * (pieces.length - 1));
      inputs.push(build(pieces.slice(0, cut), session, 1, routes));
    }
    if (next() < 0.15) inputs.push(structuredClone(inputs[inputs.length - 1]));
  }
  return inputs;
}

/** The plain path: a trie of positions, each keyed by everything a trainer reads there. */
function trieTokens(inputs: readonly TreeInput[]): number {
  type TrieNode = { key: string; rows: RouteRows | undefined; children: TrieNode[] };
  const root: TrieNode = { key: "", rows: undefined, children: [] };
  let count = 0;
  for (const { sample, routes } of inputs) {
    const tokens = [...sample.prompt_ids, ...sample.response_ids];
    const prompt = sample.prompt_ids.length;
    const facts = tokens.map((token, p) => {
      const r = p - prompt;
      const sampled = sample.turns.some((t) => p >= t.input_len && p < t.input_len + t.output_len);
      const span = sample.version_spans.find((s) => r >= s.start && r < s.end);
      const image = (sample.images ?? []).find((i) => p >= i.start && p < i.start + i.length);
      return JSON.stringify([
        token,
        r < 0 ? 0 : sample.loss_mask[r],
        r < 0 || (!sampled && sample.logprobs[r] === 0 && sample.loss_mask[r] === 0)
          ? null
          : sample.logprobs[r],
        span?.version ?? null,
        span !== undefined && span.start === r,
        image ? `${image.digest}@${image.start}` : null,
      ]);
    });
    const row = (rows: RouteRows | undefined, p: number) =>
      rows && (p + 1) * rows.width <= rows.values.length && rows.values[p * rows.width] !== -1
        ? Array.from({ length: rows.width }, (_, k) => rows.values[p * rows.width + k]).join()
        : null;
    let at = root;
    for (let p = 0; p < tokens.length; p++) {
      const mine = row(routes, p);
      let child = at.children.find((c) => {
        const theirs = row(c.rows, p);
        return c.key === facts[p] && (mine === null || theirs === null || mine === theirs);
      });
      if (!child) {
        child = { key: facts[p], rows: mine === null ? undefined : routes, children: [] };
        at.children.push(child);
        count++;
      } else if (row(child.rows, p) === null && mine !== null) child.rows = routes;
      at = child;
    }
  }
  return count;
}

Deno.test("flatten(tree) equals the samples, whole, and the tree holds what a trie of positions holds", () => {
  let shared = 0;
  for (let seed = 1; seed <= 400; seed++) {
    const inputs = cases(seed);
    const samples = inputs.map((input) => input.sample);
    const tree = sampleTree(inputs);
    assert.deepEqual(flattenTree(tree), samples, `seed ${seed}`);
    assert.equal(tree.stats.tree_tokens, trieTokens(inputs), `seed ${seed}`);
    const flat = samples.reduce((n, s) => n + s.prompt_ids.length + s.response_ids.length, 0);
    assert.deepEqual(tree.stats, {
      nodes: tree.nodes.length,
      leaves: samples.length,
      tree_tokens: tree.nodes.reduce((n, node) => n + node.tokens.length, 0),
      flat_tokens: flat,
      saved_tokens: flat - tree.stats.tree_tokens,
    });
    shared += tree.stats.saved_tokens;
    checkShape(tree.nodes, inputs, seed);
  }
  assert.ok(shared > 0, "the cases share prefixes");
});

/** Depth-first order, one id each, siblings parting at their first token, routes as named. */
function checkShape(nodes: readonly TreeNode[], inputs: readonly TreeInput[], seed: number): void {
  const routesOf = new Map(inputs.map((input) => [input.sample.routed_experts?.url, input.routes]));
  const open: number[] = []; // the path from a root to the node before
  nodes.forEach((node, id) => {
    assert.equal(node.id, id);
    while (open.length > 0 && open.at(-1) !== node.parent) open.pop();
    assert.equal(
      node.parent,
      open.at(-1) ?? null,
      `seed ${seed}: node ${id} comes in depth-first order`,
    );
    open.push(id);
    const parent = node.parent === null ? null : nodes[node.parent];
    assert.equal(node.position, parent ? parent.position + parent.tokens.length : 0);
    assert.ok(node.tokens.length > 0);
    assert.equal(node.loss_mask.length, node.tokens.length);
    assert.equal(node.logprobs.length, node.tokens.length);
    if (node.routed_experts) {
      const rows = routesOf.get(node.routed_experts.url)!;
      assert.equal(node.routed_experts.from, node.position);
      assert.ok(node.routed_experts.rows <= node.tokens.length);
      assert.ok(rows.values.length >= (node.position + node.routed_experts.rows) * rows.width);
    }
  });
  // Every sample's rows agree, position by position, with the rows its nodes name.
  const tree = { nodes };
  sampleTree(inputs).leaves.forEach((leaf, i) => {
    const own = inputs[i].routes;
    if (!own) return;
    for (const node of treePath(tree.nodes, leaf.node)) {
      const named = node.routed_experts && routesOf.get(node.routed_experts.url)!;
      for (let k = 0; named && k < node.routed_experts!.rows; k++) {
        const p = node.position + k;
        if (own.values[p * WIDTH] === -1 || named.values[p * WIDTH] === -1) continue;
        if (p * WIDTH >= own.values.length) continue;
        assert.deepEqual(
          [own.values[p * WIDTH], own.values[p * WIDTH + 1]],
          [named.values[p * WIDTH], named.values[p * WIDTH + 1]],
          `seed ${seed}: sample ${i}'s routes at ${p}`,
        );
      }
    }
  });
}

Deno.test("equal ids part where the image, the routes, the mask or a version span differ", () => {
  const out = (tokens: number[], version = "1"): Piece => ({
    kind: "out",
    tokens,
    logprobs: tokens.map(() => -0.5),
    version,
    masked: false,
  });
  const prompt: Piece = { kind: "prompt", tokens: [1, 2, 3] };
  const image = (digest: string): Piece => ({ kind: "image", tokens: [9, 9], digest });
  const parts = (inputs: TreeInput[]) =>
    sampleTree(inputs).nodes.map((node) => [node.parent, node.tokens]);
  const routes = { salt: 0, saltFrom: 0, missing: [] };
  // An image of other bytes under the same pads.
  assert.deepEqual(
    parts([
      build([prompt, image("a".repeat(64)), out([5, 6])], "s", 0, null),
      build([prompt, image("b".repeat(64)), out([5, 6])], "t", 0, null),
    ]),
    [[null, [1, 2, 3]], [0, [9, 9, 5, 6]], [0, [9, 9, 5, 6]]],
  );
  // Other experts from position 4 on (a recomputed prefix), the ids equal.
  assert.deepEqual(
    parts([
      build([prompt, out([5, 6, 7])], "s", 0, routes),
      build([prompt, out([5, 6, 7])], "t", 0, { salt: 1, saltFrom: 4, missing: [] }),
    ]),
    [[null, [1, 2, 3, 5]], [0, [6, 7]], [0, [6, 7]]],
  );
  // A row no engine forwarded agrees with any; the last token has none.
  assert.deepEqual(
    parts([
      build([prompt, out([5, 6, 7])], "s", 0, { salt: 0, saltFrom: 0, missing: [4] }),
      build([prompt, out([5, 6, 7, 8])], "t", 0, routes),
    ]),
    [[null, [1, 2, 3, 5, 6, 7]], [0, [8]]],
  );
  // One turn of 5 6 against two turns, 5 then 6, under one version.
  assert.deepEqual(
    parts([
      build([prompt, out([5, 6])], "s", 0, null),
      build([prompt, out([5]), out([6])], "t", 0, null),
    ]),
    [[null, [1, 2, 3, 5]], [0, [6]], [0, [6]]],
  );
  // Sampled under another version.
  assert.deepEqual(
    parts([
      build([prompt, out([5, 6])], "s", 0, null),
      build([prompt, out([5, 6], "2")], "t", 0, null),
    ]),
    [[null, [1, 2, 3]], [0, [5, 6]], [0, [5, 6]]],
  );
});

Deno.test("a sample ending inside another's node splits it, and a copy shares its whole path", () => {
  const out: Piece = {
    kind: "out",
    tokens: [5, 6, 7],
    logprobs: [-1, -2, -3],
    version: "1",
    masked: false,
  };
  const long = build(
    [{ kind: "prompt", tokens: [1, 2] }, out, { kind: "delta", tokens: [8] }],
    "s",
    0,
    null,
  );
  const short = build([{ kind: "prompt", tokens: [1, 2] }, out], "s", 1, null);
  const tree = sampleTree([long, short, long]);
  assert.deepEqual(
    tree.nodes.map((node) => [node.parent, node.tokens, node.loss_mask, node.logprobs]),
    [
      [null, [1, 2, 5, 6, 7], [0, 0, 1, 1, 1], [null, null, -1, -2, -3]],
      [0, [8], [0], [null]],
    ],
  );
  assert.deepEqual(tree.leaves.map((leaf) => [leaf.node, leaf.prompt_len]), [[1, 2], [0, 2], [
    1,
    2,
  ]]);
  assert.deepEqual(tree.stats, {
    nodes: 2,
    leaves: 3,
    tree_tokens: 6,
    flat_tokens: 17,
    saved_tokens: 11,
  });
  assert.deepEqual(flattenTree(tree), [long.sample, short.sample, long.sample]);
  assert.deepEqual(sampleTree([]), {
    nodes: [],
    leaves: [],
    stats: { nodes: 0, leaves: 0, tree_tokens: 0, flat_tokens: 0, saved_tokens: 0 },
  });
});
