/**
 * Samples as one prefix tree (`format=tree`; docs/trainers.md "Prefix trees"): every token that
 * several samples hold at the same position after the same prefix is held once, so a trainer that
 * trains on the tree runs each shared prefix forward and backward once.
 *
 * A node is a run of positions every sample through it agrees on, position by position, in
 * everything a trainer reads there: the token id, its loss mask, its logprob (or that nothing was
 * sampled), its weight version (and whether a version span opens there), the image whose pads it
 * is, and the routed experts the engine reported for it. Samples branch at the first position they
 * differ in any of these; a sample ending inside a node splits it, so every sample's path ends at
 * a node's end. Nodes come in depth-first order, a parent before its children, and the tokens of
 * the path from a root to a leaf's node are that sample's `prompt_ids` followed by its
 * `response_ids`. Everything else a sample says — its identity, reward, turns, its routes' file —
 * is its leaf's, as the flat export has it. {@linkcode flattenTree} turns a tree back into the
 * flat samples, field for field.
 *
 * @module
 */
import type { ExportedImage, Sample } from "./samples.ts";

/** A weight-version span of a node, over its own tokens (`start`, `end` from 0). */
export interface TreeSpan {
  readonly version: string;
  readonly start: number;
  readonly end: number;
  /** The span goes on from its parent's last one: one span of the samples, cut by the branch. */
  readonly continued?: true;
}

/**
 * Where a node's routed experts are: rows `from` to `from + rows` of the `.npy` at `url` (a
 * sample's, slime's layout, whose row `p` is position `p`), for the node's first `rows` tokens;
 * a last token no engine forwarded has none. The sample named is the one whose file covers most
 * of the node; a `-1` row there is one its engine did not forward (another sample through the node
 * may hold it: rows agree wherever both have one).
 */
export interface NodeRoutes {
  readonly url: string;
  readonly from: number;
  readonly rows: number;
}

/** One node of the tree. */
export interface TreeNode {
  /** Its index in `nodes`: depth-first, a parent before its children. */
  readonly id: number;
  /** The node it continues, `null` at a root. */
  readonly parent: number | null;
  /** Where its first token sits in every sample through it (its ancestors' tokens). */
  readonly position: number;
  readonly tokens: number[];
  /** 1 where a sample through it trains on the token, 0 elsewhere (prompts, tool output). */
  readonly loss_mask: number[];
  /** The engine's logprob where the token was sampled; `null` where nothing was. */
  readonly logprobs: (number | null)[];
  readonly version_spans: TreeSpan[];
  /** Images whose pads start in this node (`start` is the position in the samples). */
  readonly images?: ExportedImage[];
  readonly routed_experts?: NodeRoutes;
}

/** What the tree holds per token, and so what a leaf leaves out of its sample. */
type PerToken =
  | "prompt_ids"
  | "response_ids"
  | "loss_mask"
  | "logprobs"
  | "version_spans"
  | "images";

/** One sample: where its path ends, where its prompt ends, and the rest of it as exported. */
export type TreeLeaf = Omit<Sample, PerToken> & {
  /** The node its path ends at. */
  readonly node: number;
  /** Tokens of its path that are its `prompt_ids`; the rest are its `response_ids`. */
  readonly prompt_len: number;
};

/** What the tree saves against the flat export. */
export interface TreeStats {
  readonly nodes: number;
  readonly leaves: number;
  /** Tokens in the tree's nodes: what a trainer forwards once. */
  readonly tree_tokens: number;
  /** Tokens in the flat samples: what it forwards without the tree. */
  readonly flat_tokens: number;
  readonly saved_tokens: number;
}

/** A prefix tree of samples. */
export interface SampleTree {
  readonly nodes: TreeNode[];
  readonly leaves: TreeLeaf[];
  readonly stats: TreeStats;
}

/**
 * A sample's routed experts as the tree compares them: its `.npy`'s values (slime's layout, row
 * `p` the experts of position `p`, `width` values a row). A row of `-1` (no engine forwarded the
 * token) and a position past the last row have none, and agree with any.
 */
export interface RouteRows {
  readonly values: ArrayLike<number>;
  readonly width: number;
}

/** A sample to place in the tree, with its routed experts' rows when it has them. */
export interface TreeInput {
  readonly sample: Sample;
  readonly routes?: RouteRows;
}

/** Whether `rows` has position `p`'s experts. */
function hasRow(rows: RouteRows | undefined, p: number): rows is RouteRows {
  return rows !== undefined && (p + 1) * rows.width <= rows.values.length &&
    rows.values[p * rows.width] !== -1;
}

/** Whether two samples' rows of position `p` agree: equal, or one of them has none. */
function sameRow(a: RouteRows | undefined, b: RouteRows | undefined, p: number): boolean {
  if (a === b || !hasRow(a, p) || !hasRow(b, p)) return true;
  for (let k = p * a.width, end = k + a.width; k < end; k++) {
    if (a.values[k] !== b.values[k]) return false;
  }
  return true;
}

/** A node while the tree is built: its positions' facts in parallel arrays. */
interface Building {
  parent: Building | null;
  position: number;
  tokens: number[];
  mask: number[];
  logprobs: (number | null)[];
  versions: (string | null)[];
  /** A version span opens here. */
  opens: boolean[];
  /** `digest@start` of the image whose pad this is. */
  images: (string | null)[];
  /** Whose rows hold each position's routed experts (see {@linkcode RouteRows}). */
  routes: (RouteRows | undefined)[];
  /** The sample whose routes file the node names, and how many of its tokens that covers. */
  routesOf: { sample: Sample; rows: number } | null;
  imageList: ExportedImage[];
  children: Building[];
}

/** One sample's facts, position by position, as the tree compares them. */
interface Positions {
  readonly sample: Sample;
  readonly length: number;
  readonly tokens: readonly number[];
  readonly mask: readonly number[];
  readonly logprobs: readonly (number | null)[];
  readonly versions: readonly (string | null)[];
  readonly opens: readonly boolean[];
  readonly images: readonly (string | null)[];
  readonly routes: RouteRows | undefined;
  /** Rows of its routes file (`len(tokens) - 1`), 0 without one. */
  readonly routeRows: number;
}

/** A sample's facts by position (in `prompt_ids ++ response_ids`). */
function positionsOf({ sample, routes }: TreeInput): Positions {
  const prompt = sample.prompt_ids.length;
  const length = prompt + sample.response_ids.length;
  const tokens = [...sample.prompt_ids, ...sample.response_ids];
  const mask = new Array<number>(length).fill(0);
  const logprobs = new Array<number | null>(length).fill(null);
  const versions = new Array<string | null>(length).fill(null);
  const opens = new Array<boolean>(length).fill(false);
  const images = new Array<string | null>(length).fill(null);
  // What the engine sampled: each turn's output, from the prompt it read.
  const sampled = new Uint8Array(length);
  for (const turn of sample.turns) {
    sampled.fill(
      1,
      Math.min(turn.input_len, length),
      Math.min(turn.input_len + turn.output_len, length),
    );
  }
  for (let i = 0; i < sample.response_ids.length; i++) {
    const p = prompt + i;
    mask[p] = sample.loss_mask[i];
    const logprob = sample.logprobs[i];
    // A position nothing sampled holds 0 in the flat export; any other value is kept.
    logprobs[p] = sampled[p] === 0 && logprob === 0 && mask[p] === 0 ? null : logprob;
  }
  for (const span of sample.version_spans) {
    opens[prompt + span.start] = true;
    versions.fill(span.version, prompt + span.start, prompt + span.end);
  }
  for (const image of sample.images ?? []) {
    images.fill(`${image.digest}@${image.start}`, image.start, image.start + image.length);
  }
  const routeRows = sample.routed_experts ? sample.routed_experts.shape[0] : 0;
  return { sample, length, tokens, mask, logprobs, versions, opens, images, routes, routeRows };
}

/** Whether node `node`'s position `i` and the sample's position `p` agree. */
function agree(node: Building, i: number, s: Positions, p: number): boolean {
  return node.tokens[i] === s.tokens[p] && node.mask[i] === s.mask[p] &&
    node.logprobs[i] === s.logprobs[p] && node.versions[i] === s.versions[p] &&
    node.opens[i] === s.opens[p] && node.images[i] === s.images[p] &&
    sameRow(node.routes[i], s.routes, p);
}

/** A new node of the sample's positions `from` to its end. */
function leafNode(s: Positions, from: number, parent: Building | null): Building {
  const node: Building = {
    parent,
    position: from,
    tokens: s.tokens.slice(from),
    mask: s.mask.slice(from),
    logprobs: s.logprobs.slice(from),
    versions: s.versions.slice(from),
    opens: s.opens.slice(from),
    images: s.images.slice(from),
    routes: Array.from(
      { length: s.length - from },
      (_, i) => hasRow(s.routes, from + i) ? s.routes : undefined,
    ),
    routesOf: null,
    imageList: (s.sample.images ?? []).filter((image) => image.start >= from),
    children: [],
  };
  claimRoutes(node, s);
  return node;
}

/** Names `s`'s routes file as the node's when it covers more of the node than the one named. */
function claimRoutes(node: Building, s: Positions): void {
  if (s.routeRows === 0) return;
  const rows = Math.max(0, Math.min(node.tokens.length, s.routeRows - node.position));
  if (node.routesOf === null || rows > node.routesOf.rows) {
    node.routesOf = { sample: s.sample, rows };
  }
}

/**
 * Cuts `node` after its first `at` tokens: a new node of those takes its place under its parent,
 * and `node` (its rest, its children and the leaves at its end kept) becomes its only child.
 */
function split(node: Building, at: number, siblings: Building[]): Building {
  const head: Building = {
    parent: node.parent,
    position: node.position,
    tokens: node.tokens.slice(0, at),
    mask: node.mask.slice(0, at),
    logprobs: node.logprobs.slice(0, at),
    versions: node.versions.slice(0, at),
    opens: node.opens.slice(0, at),
    images: node.images.slice(0, at),
    routes: node.routes.slice(0, at),
    routesOf: node.routesOf && { ...node.routesOf, rows: Math.min(node.routesOf.rows, at) },
    imageList: node.imageList.filter((image) => image.start < node.position + at),
    children: [node],
  };
  siblings[siblings.indexOf(node)] = head;
  node.parent = head;
  node.position += at;
  for (const field of ["tokens", "mask", "logprobs", "versions", "opens", "images"] as const) {
    (node[field] as unknown[]).splice(0, at);
  }
  node.routes.splice(0, at);
  node.imageList = node.imageList.filter((image) => image.start >= node.position);
  if (node.routesOf) {
    const rows = Math.max(0, node.routesOf.rows - at);
    node.routesOf = rows > 0 ? { ...node.routesOf, rows } : null;
  }
  return head;
}

/** Places one sample; answers the node its path ends at. */
function place(roots: Building[], s: Positions): Building {
  let siblings = roots;
  let parent: Building | null = null;
  let p = 0;
  while (true) {
    const child = siblings.find((node) => agree(node, 0, s, p));
    if (child === undefined) {
      const node = leafNode(s, p, parent);
      siblings.push(node);
      return node;
    }
    let i = 0;
    while (i < child.tokens.length && p + i < s.length && agree(child, i, s, p + i)) {
      // A position only one side had routes for takes the other's.
      if (!hasRow(child.routes[i], p + i) && hasRow(s.routes, p + i)) child.routes[i] = s.routes;
      i++;
    }
    if (i < child.tokens.length) {
      const head = split(child, i, siblings);
      claimRoutes(head, s);
      if (p + i === s.length) return head;
      const node = leafNode(s, p + i, head);
      head.children.push(node);
      return node;
    }
    claimRoutes(child, s);
    p += i;
    if (p === s.length) return child;
    parent = child;
    siblings = child.children;
  }
}

/** The spans of a node's versions, over its own tokens. */
function nodeSpans(node: Building): TreeSpan[] {
  const spans: TreeSpan[] = [];
  for (let i = 0; i < node.tokens.length; i++) {
    const version = node.versions[i];
    if (version === null) continue;
    const last = spans.at(-1);
    if (last && last.end === i && last.version === version && !node.opens[i]) {
      spans[spans.length - 1] = { ...last, end: i + 1 };
    } else {
      spans.push({
        version,
        start: i,
        end: i + 1,
        ...(i === 0 && !node.opens[0] ? { continued: true as const } : {}),
      });
    }
  }
  return spans;
}

/**
 * The samples as one prefix tree, their leaves in the samples' order.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { flattenTree, sampleTree } from "./prefix_tree.ts";
 * import type { Sample } from "./samples.ts";
 * // Two samples of one prompt [1, 2, 3], sampling 7 8 and 7 9.
 * const sample = (response: number[]) => ({
 *   prompt_ids: [1, 2, 3], response_ids: response, loss_mask: [1, 1], logprobs: [-0.5, -0.25],
 *   version_spans: [{ version: "3", start: 0, end: 2 }],
 *   turns: [{ input_len: 3, output_len: 2, finish_reason: "stop", flags: [], weight_versions: ["3"] }],
 *   session_id: "s", reward: 1,
 * }) as unknown as Sample;
 * const samples = [sample([7, 8]), sample([7, 9])];
 * const tree = sampleTree(samples.map((s) => ({ sample: s })));
 * assert.deepEqual(tree.nodes.map((n) => [n.parent, n.tokens]), [[null, [1, 2, 3, 7]], [0, [8]], [0, [9]]]);
 * assert.deepEqual(tree.stats, { nodes: 3, leaves: 2, tree_tokens: 6, flat_tokens: 10, saved_tokens: 4 });
 * assert.deepEqual(flattenTree(tree), samples);
 * ```
 */
export function sampleTree(inputs: readonly TreeInput[]): SampleTree {
  const roots: Building[] = [];
  const ends = inputs.map((input) => place(roots, positionsOf(input)));
  const ids = new Map<Building, number>();
  const nodes: TreeNode[] = [];
  const stack = [...roots].reverse();
  while (stack.length > 0) {
    const node = stack.pop()!;
    ids.set(node, nodes.length);
    nodes.push({
      id: nodes.length,
      parent: node.parent === null ? null : ids.get(node.parent)!,
      position: node.position,
      tokens: node.tokens,
      loss_mask: node.mask,
      logprobs: node.logprobs,
      version_spans: nodeSpans(node),
      ...(node.imageList.length > 0 ? { images: node.imageList } : {}),
      ...(node.routesOf && node.routesOf.sample.routed_experts
        ? {
          routed_experts: {
            url: node.routesOf.sample.routed_experts.url,
            from: node.position,
            rows: node.routesOf.rows,
          },
        }
        : {}),
    });
    for (let i = node.children.length - 1; i >= 0; i--) stack.push(node.children[i]);
  }
  const leaves = inputs.map(({ sample }, i): TreeLeaf => {
    const {
      prompt_ids,
      response_ids: _r,
      loss_mask: _m,
      logprobs: _l,
      version_spans: _v,
      images: _i,
      ...rest
    } = sample;
    return { ...rest, node: ids.get(ends[i])!, prompt_len: prompt_ids.length };
  });
  const treeTokens = nodes.reduce((n, node) => n + node.tokens.length, 0);
  const flatTokens = inputs.reduce(
    (n, { sample }) => n + sample.prompt_ids.length + sample.response_ids.length,
    0,
  );
  return {
    nodes,
    leaves,
    stats: {
      nodes: nodes.length,
      leaves: leaves.length,
      tree_tokens: treeTokens,
      flat_tokens: flatTokens,
      saved_tokens: flatTokens - treeTokens,
    },
  };
}

/** The nodes from a root to `id`, in order. */
export function treePath(nodes: readonly TreeNode[], id: number): TreeNode[] {
  const path: TreeNode[] = [];
  for (let at: number | null = id; at !== null; at = nodes[at].parent) path.push(nodes[at]);
  return path.reverse();
}

/**
 * The flat samples a tree holds, one per leaf in order: each its path's tokens split at its
 * `prompt_len`, the masks, logprobs (0 where nothing was sampled), version spans and images of
 * its path (an image's `url` its own session's), and the rest of its leaf.
 */
export function flattenTree(tree: Pick<SampleTree, "nodes" | "leaves">): Sample[] {
  return tree.leaves.map((leaf) => {
    const { node, prompt_len, ...rest } = leaf;
    const tokens: number[] = [];
    const mask: number[] = [];
    const logprobs: number[] = [];
    const spans: { version: string; start: number; end: number }[] = [];
    const images: ExportedImage[] = [];
    for (const step of treePath(tree.nodes, node)) {
      for (const span of step.version_spans) {
        const start = step.position + span.start - prompt_len;
        const end = step.position + span.end - prompt_len;
        const last = spans.at(-1);
        if (span.continued && last && last.end === start && last.version === span.version) {
          last.end = end;
        } else spans.push({ version: span.version, start, end });
      }
      for (let i = 0; i < step.tokens.length; i++) {
        tokens.push(step.tokens[i]);
        mask.push(step.loss_mask[i]);
        logprobs.push(step.logprobs[i] ?? 0);
      }
      for (const image of step.images ?? []) {
        images.push({
          ...image,
          url: `/sessions/${encodeURIComponent(leaf.session_id)}/images/${image.digest}`,
        });
      }
    }
    return {
      ...rest,
      prompt_ids: tokens.slice(0, prompt_len),
      response_ids: tokens.slice(prompt_len),
      loss_mask: mask.slice(prompt_len),
      logprobs: logprobs.slice(prompt_len),
      version_spans: spans,
      ...(images.length > 0 ? { images } : {}),
    } as Sample;
  });
}
