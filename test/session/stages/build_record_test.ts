/**
 * The record stage alone: a generated turn's record, head and blobs from routing's, the engine's
 * and the settled output's facts, compared whole.
 */
import assert from "node:assert/strict";
import { type ChainHeader, NO_ROUTES, type TurnImage } from "../../../lib/chain/mod.ts";
import { extendDigest } from "../../../lib/chat/mod.ts";
import { type Generation, PromptIds } from "../../../lib/engine/mod.ts";
import { decodeTurnTokens } from "../../../lib/kv/mod.ts";
import type { ChainRoute } from "../../../lib/session/mod.ts";
import { buildTurnRecord, type RecordFacts } from "../../../lib/session/stages/build_record.ts";
import type { SettledOutput } from "../../../lib/session/stages/settle_output.ts";

const HEADER: ChainHeader = {
  sessionId: "sess_1",
  id: "c0",
  role: "main",
  wipedAt: null,
  parent: null,
  dispatch: null,
  agentId: null,
  model: "m",
  tools: ["Read"],
  reasoning: false,
  startDigest: "start",
  turnCount: 2,
  tokenCount: 40,
  messageCount: 3,
  digest: "d3",
  lastRid: "rid_b",
  createdAt: 1,
  updatedAt: 2,
};

const IMAGE: TurnImage = {
  digest: "img",
  mediaType: "image/png",
  width: 4,
  height: 4,
  bytes: 70,
  start: 42,
  length: 3,
};

function route(overrides: Partial<ChainRoute> = {}): ChainRoute {
  const history = Array.from({ length: 40 }, (_, i) => 100 + i);
  const delta = [7, 8, 9, 9, 9, 10];
  return {
    kind: "append",
    sessionId: "sess_1",
    chainId: "c0",
    chain: { key: ["chain", "sess_1", "c0"], value: HEADER, versionstamp: "0001" },
    base: { turnCount: 2, lastRid: "rid_b", reasoning: false },
    requestDigest: "d4",
    bodyDigest: "b4",
    prompt: {
      ids: PromptIds.from(history).concat(delta),
      delta,
      images: [IMAGE],
      newImages: [IMAGE],
      imageData: new Map([["img", "AAAA"]]),
      startsInReasoning: true,
      messages: { messages: [{ role: "user", content: "look" }] },
      routes: NO_ROUTES,
    },
    tools: ["Read", "Write"],
    recordMessages: false,
    ...overrides,
  };
}

const GENERATION: Generation = {
  rid: "rid_c",
  outputIds: [50, 51, 52],
  logprobs: [-0.25, -0.5, -1],
  finish: { type: "length" },
  weightVersions: ["v1", "v2"],
  versionSpans: [{ version: "v1", start: 0, end: 1 }, { version: "v2", start: 1, end: 3 }],
  aborts: 1,
  engineMs: 30,
  engineReportedMs: 28,
  cachedTokens: 40,
  worker: "1",
};

const SETTLED: SettledOutput = {
  output: [50, 51, 52],
  end: { reason: "length", stopSequence: null },
  closing: [99],
  flags: ["engine_aborted"],
  masked: false,
  blocks: [
    { type: "thinking", thinking: "hm" },
    { type: "tool_call", name: "Read", input: {} },
  ],
  reasoning: true,
};

function facts(overrides: Partial<RecordFacts> = {}): RecordFacts {
  return {
    rid: "rid_c",
    route: route(),
    generation: GENERATION,
    settled: SETTLED,
    routes: null,
    request: { model: "m2", toolNames: ["Read", "Write"], messageCount: 5 },
    replyIdentity: "reply",
    now: 1_000,
    timings: { renderMs: 2, totalMs: 40 },
    ...overrides,
  };
}

Deno.test("buildTurnRecord() gives a later turn's whole record and the chain's next head", () => {
  const { turn, header, messageChunks, routeChunks } = buildTurnRecord(facts());
  const digest = extendDigest("d4", "reply");
  assert.deepEqual(turn, {
    index: 2,
    rid: "rid_c",
    parent: "rid_b",
    inputLen: 46,
    deltaLen: 6,
    outputLen: 3,
    closingLen: 1,
    finishReason: "length",
    stopSequence: null,
    flags: ["engine_aborted"],
    route: "append",
    toolCalls: 1,
    masked: false,
    weightVersions: ["v1", "v2"],
    versionSpans: GENERATION.versionSpans,
    aborts: 1,
    cachedTokens: 40,
    worker: "1",
    images: [IMAGE],
    startsInReasoning: true,
    reasoning: true,
    toolNames: ["Read", "Write"],
    model: "m2",
    messageCount: 6,
    digest,
    requestDigest: "d4",
    bodyDigest: "b4",
    chunks: 1,
    createdAt: 1_000,
    timings: { renderMs: 2, engineMs: 30, engineReportedMs: 28, totalMs: 40 },
  });
  assert.deepEqual(header, {
    ...HEADER,
    tools: ["Read", "Write"],
    reasoning: true,
    turnCount: 3,
    tokenCount: 50,
    messageCount: 6,
    digest,
    lastRid: "rid_c",
    updatedAt: 1_000,
  });
  assert.equal(messageChunks, null);
  assert.equal(routeChunks, null);
});

Deno.test("buildTurnRecord()'s chunks hold the delta, the output, its logprobs and the closing tokens", () => {
  const { chunks } = buildTurnRecord(facts());
  const tokens = decodeTurnTokens(chunks);
  assert.deepEqual(Array.from(tokens.delta), [7, 8, 9, 9, 9, 10]);
  assert.deepEqual(Array.from(tokens.output), [50, 51, 52]);
  assert.deepEqual(Array.from(tokens.logprobs), [-0.25, -0.5, -1]);
  assert.deepEqual(Array.from(tokens.closing), [99]);
});

Deno.test("buildTurnRecord() leaves out what the engine did not report and images the delta lacks", () => {
  const { cachedTokens: _c, worker: _w, ...generation } = GENERATION;
  const { turn } = buildTurnRecord(facts({
    generation,
    route: route({ prompt: { ...route().prompt, newImages: [] } }),
  }));
  assert.equal("cachedTokens" in turn, false);
  assert.equal("worker" in turn, false);
  assert.equal("images" in turn, false);
  assert.equal("messageChunks" in turn, false);
});

Deno.test("buildTurnRecord() keeps the request's messages as chunks when the session records them", () => {
  const { turn, messageChunks } = buildTurnRecord(
    facts({ route: route({ recordMessages: true }) }),
  );
  assert.ok(messageChunks);
  assert.equal(turn.messageChunks, messageChunks.length);
  const bytes = new Uint8Array(messageChunks.reduce((n, chunk) => n + chunk.length, 0));
  let at = 0;
  for (const chunk of messageChunks) bytes.set(chunk, (at += chunk.length) - chunk.length);
  assert.deepEqual(JSON.parse(new TextDecoder().decode(bytes)), {
    messages: [{ role: "user", content: "look" }],
  });
});

Deno.test("buildTurnRecord() starts a chain's first turn from its registered header", () => {
  const first: ChainHeader = {
    ...HEADER,
    turnCount: 0,
    tokenCount: 0,
    messageCount: 0,
    digest: "",
    lastRid: null,
  };
  const { turn, header } = buildTurnRecord(facts({
    route: route({
      kind: "start",
      chain: { key: ["chain", "sess_1", "c0"], value: first, versionstamp: "0002" },
      base: { turnCount: 0, lastRid: null, reasoning: false },
      prompt: { ...route().prompt, ids: PromptIds.from([1, 2, 3]), delta: [1, 2, 3] },
    }),
    settled: { ...SETTLED, closing: [], reasoning: false, blocks: [] },
  }));
  assert.equal(turn.index, 0);
  assert.equal(turn.parent, null);
  assert.equal(turn.inputLen, 3);
  assert.equal(turn.deltaLen, 3);
  assert.equal(turn.route, "start");
  assert.equal(turn.toolCalls, 0);
  assert.equal(header.turnCount, 1);
  assert.equal(header.tokenCount, 6);
  assert.equal(header.reasoning, false);
  assert.equal(header.lastRid, "rid_c");
});
