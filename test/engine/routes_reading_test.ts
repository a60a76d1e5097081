/**
 * Routed experts read on the engine HTTP worker (`routes_reading.ts`) against the plain path, the
 * client decoding the string on its own thread: answers built to fool the splice (copies of the
 * string elsewhere, escapes, duplicate keys, forged markers, numbers a round trip would change,
 * rows that do not decode) give the same view either way; and through HTTP, both dialects' clients
 * give the same generation, whole and streamed in pieces cut anywhere, on both transports; told
 * (`onAnswered`) before the rows are read as it is returned; aborted or failed then, alike.
 */
import assert from "node:assert/strict";
import {
  decodeNpyRoutes,
  decodeSglangRoutes,
  type EngineHttpWorker,
  expertDtype,
  fromBase64,
  type Generation,
  markerIndex,
  type MoeShape,
  RoutesFormatError,
  samplingParams,
  SglangClient,
  sha256Hex,
  takeRoutes,
  toBase64,
  VllmClient,
  writeNpy,
} from "../../lib/engine/mod.ts";
import type { DecodedRoutes, RoutesAsk } from "../../lib/engine/routes_reading.ts";
import { startScriptedEngine } from "../../lib/scripted_engine/mod.ts";
import { qwen3 } from "../_gateway.ts";
import { TRANSPORTS } from "./_client.ts";
import { random } from "../_random.ts";

const SHAPE = { layers: 3, topK: 2, experts: 40 };
const SGLANG: RoutesAsk = { reader: "sglang", shape: SHAPE, dtype: "uint8" };
const VLLM: RoutesAsk = { reader: "vllm", shape: SHAPE, dtype: "uint8" };

/** `rows` rows of int32 expert ids, as SGLang sends them (base64). */
function sglangRoutes(rows: number, next: () => number, experts = SHAPE.experts): string {
  const ids = Int32Array.from(
    { length: rows * SHAPE.layers * SHAPE.topK },
    () => Math.floor(next() * experts),
  );
  return toBase64(new Uint8Array(ids.buffer));
}

/** `rows` rows as vLLM sends them: base64 of a `.npy` of `dtype`. */
function vllmRoutes(rows: number, next: () => number, dtype: "uint8" | "uint16" | "int32") {
  const length = rows * SHAPE.layers * SHAPE.topK;
  const ids = Array.from({ length }, () => Math.floor(next() * SHAPE.experts));
  const values = dtype === "uint8"
    ? Uint8Array.from(ids)
    : dtype === "uint16"
    ? Uint16Array.from(ids)
    : Int32Array.from(ids);
  return toBase64(writeNpy(values, [rows, SHAPE.layers, SHAPE.topK]));
}

/** The fields each dialect's client reads routes from, found independently of the lib. */
function fields(ask: RoutesAsk, answer: unknown): { holder: Record<string, unknown> }[] {
  // deno-lint-ignore no-explicit-any
  const a = answer as any;
  if (ask.reader === "sglang") {
    return a?.meta_info && typeof a.meta_info === "object" ? [{ holder: a.meta_info }] : [];
  }
  return Array.isArray(a?.choices)
    ? a.choices.filter((c: unknown) => c && typeof c === "object").map((holder: unknown) => ({
      holder,
    }))
    : [];
}

/** What the client reads of one routes value on its own thread: rows, an error, or nothing. */
function plainRows(ask: RoutesAsk, value: unknown): unknown {
  if (typeof value !== "string") return { none: value ?? null };
  try {
    const rows = ask.reader === "sglang"
      ? decodeSglangRoutes(value, ask.shape, 0, ask.dtype)
      : decodeNpyRoutes(fromBase64(value), ask.shape, 0, ask.dtype);
    return { rows: rows.rows, values: Array.from(rows.values) };
  } catch (error) {
    assert.ok(error instanceof RoutesFormatError);
    return { error: error.message };
  }
}

/** The answer as the client sees it on its own thread: parsed, each routes value read. */
function plainView(ask: RoutesAsk, text: string): unknown {
  const answer = JSON.parse(text);
  for (const { holder } of fields(ask, answer)) {
    holder.routed_experts = plainRows(ask, holder.routed_experts);
  }
  return answer;
}

/** The answer as the client sees it after the worker: the taken text, each marker's rows. */
function workerView(ask: RoutesAsk, text: string): { view: unknown; taken: boolean } {
  const nonce = crypto.randomUUID();
  const taken = takeRoutes(text, ask, nonce);
  if (taken === null) return { view: plainView(ask, text), taken: false };
  const answer = JSON.parse(taken.text);
  for (const { holder } of fields(ask, answer)) {
    const value = holder.routed_experts;
    const k = markerIndex(value, nonce);
    if (k === null) {
      holder.routed_experts = plainRows(ask, value);
      continue;
    }
    const rows: DecodedRoutes = taken.decoded[k];
    if ("error" in rows) {
      holder.routed_experts = { error: rows.error };
      continue;
    }
    assert.equal(rows.digest, sha256Hex(rows.values), "the digest is the rows' own");
    holder.routed_experts = { rows: rows.rows, values: Array.from(rows.values) };
  }
  return { view: answer, taken: true };
}

/** Asserts the two views are the same, -0 apart from 0; says whether the worker took the rows. */
function same(ask: RoutesAsk, text: string, label: string): boolean {
  const { view, taken } = workerView(ask, text);
  assert.deepStrictEqual(view, plainView(ask, text), label);
  return taken;
}

function sglangAnswer(routes: unknown, extra: Record<string, unknown> = {}) {
  return {
    output_ids: [5, 6, 7],
    meta_info: {
      finish_reason: { type: "stop", matched: 7 },
      output_token_logprobs: [[-0.5, 5, null], [-0.25, 6, null], [0, 7, null]],
      routed_experts: routes,
      e2e_latency: 0.01,
    },
    ...extra,
  };
}

Deno.test("an answer's routes are taken out and decoded, the rest of its text as it was", () => {
  const next = random(1);
  const routes = sglangRoutes(9, next);
  const text = JSON.stringify(sglangAnswer(routes));
  const nonce = "n0";
  const taken = takeRoutes(text, SGLANG, nonce)!;
  assert.equal(
    taken.text,
    text.replace(`"${routes}"`, `{"$routes":0,"nonce":"n0"}`),
    "only the string's own text is replaced",
  );
  assert.equal(taken.decoded.length, 1);
  assert.ok(same(SGLANG, text, "plain answer"));
  // No routes, or not JSON: nothing taken.
  assert.equal(takeRoutes(JSON.stringify(sglangAnswer(null)), SGLANG, nonce), null);
  assert.equal(takeRoutes(JSON.stringify({ output_ids: [1] }), SGLANG, nonce), null);
  assert.equal(takeRoutes(`{"meta_info":{"routed_experts":"${routes}"`, SGLANG, nonce), null);
});

Deno.test("answers built to fool the splice read the same as on the client's thread", () => {
  const next = random(2);
  const routes = sglangRoutes(4, next);
  const escaped = routes.replaceAll("/", "\\/");
  const cases: [string, string, boolean][] = [
    ["spaced", JSON.stringify(sglangAnswer(routes), null, 2), true],
    ["a copy in a field after it", JSON.stringify(sglangAnswer(routes, { text: routes })), true],
    // The copy comes first: it would be replaced, the field left a string, so nothing is taken.
    [
      "a copy in a field before it",
      JSON.stringify({ text: routes, ...sglangAnswer(routes) }),
      false,
    ],
    [
      "a copy inside a string, after an escaped quote",
      JSON.stringify({ text: `say "${routes}`, ...sglangAnswer(routes) }),
      false,
    ],
    ["a key equal to it", JSON.stringify({ [routes]: 1, ...sglangAnswer(routes) }), false],
    [
      "the string escaped (\\/)",
      JSON.stringify(sglangAnswer("@@")).replace('"@@"', `"${escaped}"`),
      !routes.includes("/"),
    ],
    [
      "the string escaped (\\u)",
      JSON.stringify(sglangAnswer("@@")).replace(
        '"@@"',
        `"\\u00${routes.charCodeAt(0).toString(16)}${routes.slice(1)}"`,
      ),
      false,
    ],
    [
      "an escaped field, and a copy that is not",
      JSON.stringify({ ...sglangAnswer("@@"), text: routes }).replace(
        '"@@"',
        `"\\u00${routes.charCodeAt(0).toString(16)}${routes.slice(1)}"`,
      ),
      false,
    ],
    [
      "duplicate meta_info keys (the last is read)",
      `{"meta_info":{"routed_experts":"${routes}"},"meta_info":{"routed_experts":"${routes}","x":-0.0}}`,
      false,
    ],
    [
      "numbers a round trip would change",
      JSON.stringify(sglangAnswer(routes)).replace('"e2e_latency":0.01', '"e2e_latency":-0.0')
        .replace("[0,7,null]", "[1e400,7,-1e400]"),
      true,
    ],
    [
      "a forged marker",
      JSON.stringify(sglangAnswer({ $routes: 0, nonce: "guessed" })),
      false,
    ],
    ["rows that are not whole", JSON.stringify(sglangAnswer(routes.slice(0, -8))), true],
    ["an expert out of range", JSON.stringify(sglangAnswer(sglangRoutes(3, next, 300))), true],
    ["not base64", JSON.stringify(sglangAnswer("not base64!")), true],
    ["no rows", JSON.stringify(sglangAnswer("")), true],
    ["a number", JSON.stringify(sglangAnswer(7)), false],
  ];
  for (const [label, text, taken] of cases) {
    assert.equal(same(SGLANG, text, label), taken, `${label}: taken`);
  }
  // Random answers: routes of every size, copies and decoys salted in at random places.
  for (let seed = 0; seed < 200; seed++) {
    const r = random(100 + seed);
    const value = sglangRoutes(Math.floor(r() * 6), r, r() < 0.1 ? 300 : SHAPE.experts);
    const answer: Record<string, unknown> = sglangAnswer(value);
    if (r() < 0.3) answer[r() < 0.5 ? "text" : value] = r() < 0.5 ? value : `"${value}`;
    let text = JSON.stringify(
      r() < 0.5 ? { z: value, ...answer } : answer,
      null,
      r() < 0.3 ? 1 : 0,
    );
    if (r() < 0.2) text = text.replace(`"${value}"`, `"${value.replaceAll("A", "\\u0041")}"`);
    same(SGLANG, text, `seed ${seed}`);
  }
});

Deno.test("vLLM's choices: each choice's .npy, copies between choices, every dtype", () => {
  const next = random(3);
  for (const dtype of ["uint8", "uint16", "int32"] as const) {
    const one = vllmRoutes(5, next, dtype);
    const two = vllmRoutes(2, next, dtype);
    const choice = (routes: unknown) => ({ index: 0, token_ids: [1, 2], routed_experts: routes });
    const cases: [string, unknown][] = [
      ["one choice", { choices: [choice(one)] }],
      ["two choices", { choices: [choice(one), choice(two)] }],
      ["the same rows twice", { choices: [choice(one), choice(one)] }],
      ["nested lists (older servers)", {
        choices: [choice([[[1, 2], [3, 4], [5, 6]]])],
        prompt_routed_experts: [[[1, 2], [3, 4], [5, 6]]],
      }],
      ["a copy outside the choices", { note: two, choices: [choice(one), choice(two)] }],
      ["a file of another shape", {
        choices: [choice(toBase64(writeNpy(new Uint8Array(4), [2, 2])))],
      }],
    ];
    for (const [label, answer] of cases) same(VLLM, JSON.stringify(answer), `${dtype}: ${label}`);
  }
});

/** A generation as the gateway keeps it, with the rows as plain arrays (no digest; the cache is warm after the first). */
function kept(generation: Generation) {
  const {
    routes,
    engineMs: _ms,
    engineReportedMs: _reported,
    rid: _rid,
    cachedTokens: _cached,
    ...rest
  } = generation;
  return {
    ...rest,
    routes: routes
      ? { start: routes.start, rows: routes.rows, values: Array.from(routes.values) }
      : routes,
  };
}

const MOE: MoeShape = { layers: 4, topK: 2, experts: 300, denseLayers: [0] };

for (const dialect of ["sglang", "vllm"] as const) {
  for (const vllmRoutes of dialect === "vllm" ? ["npy", "split"] as const : [undefined]) {
    Deno.test(`${dialect}${vllmRoutes ? ` (${vllmRoutes})` : ""}: the worker's rows are the client's own, whole and streamed`, async () => {
      const tokenizer = await qwen3();
      const engine = await startScriptedEngine({
        tokenizer,
        script: () => "Reading the failing test first, then the module it imports.",
        dialect,
        moe: MOE,
        vllmRoutes,
      });
      try {
        const prompt = tokenizer.encode("Fix the failing test in tests/test_parser.py, please.");
        const sampling = samplingFor(prompt.length, tokenizer.eosId, 64);
        const results = [];
        for (const { httpWorker } of TRANSPORTS) {
          for (const stream of [false, true]) {
            for (const recorded of [0, 3]) {
              const client = clientOf(dialect, engine.url, httpWorker);
              try {
                const told: Omit<Generation, "routes">[] = [];
                const generation = await client.generate({
                  inputIds: prompt,
                  sampling,
                  routes: { recorded },
                  ...(stream ? { onTokens: () => {} } : {}),
                  onAnswered: (early) => told.push(structuredClone(early)),
                });
                // Told once, before its rows were read, the generation as it was returned.
                assert.equal(told.length, 1);
                const { routes: _routes, ...answered } = kept({ ...told[0], routes: null });
                const { routes: _rows, ...returned } = kept(generation);
                assert.deepStrictEqual(answered, returned);
                // Read on the worker (where the rows are hashed), but for the older nested lists.
                if (httpWorker && vllmRoutes !== "split") {
                  assert.equal(generation.routes?.digest, sha256Hex(generation.routes!.values));
                }
                results.push({ key: `${stream}:${recorded}`, generation: kept(generation) });
              } finally {
                await client.close();
              }
            }
          }
        }
        const half = results.length / 2;
        for (let i = 0; i < half; i++) {
          assert.deepStrictEqual(results[half + i], results[i], results[i].key);
          assert.ok((results[i].generation.routes?.rows ?? 0) > 0);
        }
      } finally {
        await engine.close();
      }
    });
  }
}

/** Sampling for a prompt of `promptLength` tokens, at most `maxTokens`, stopping at `eosId`. */
function samplingFor(promptLength: number, eosId: number, maxTokens: number) {
  return samplingParams({ maxTokens }, { promptLength, contextLength: 40_960, stopIds: [eosId] });
}

function clientOf(dialect: "sglang" | "vllm", url: string, httpWorker?: EngineHttpWorker) {
  const options = { connections: 2, timeoutMs: 10_000, moe: MOE, httpWorker };
  return dialect === "sglang" ? new SglangClient(url, options) : new VllmClient(url, options);
}

for (const dialect of ["sglang", "vllm"] as const) {
  Deno.test(`${dialect}: a generation aborted once answered, its rows still being read, ends on both transports`, async () => {
    const tokenizer = await qwen3();
    const engine = await startScriptedEngine({
      tokenizer,
      script: () => "Looking at the parser.",
      dialect,
      moe: MOE,
    });
    try {
      const prompt = tokenizer.encode("Fix the parser.");
      const sampling = samplingFor(prompt.length, tokenizer.eosId, 32);
      for (const { httpWorker } of TRANSPORTS) {
        const client = clientOf(dialect, engine.url, httpWorker);
        try {
          const abort = new AbortController();
          const reason = new Error("the client left");
          // Its rows may have come already (then it ends with them: the turn sees the signal), or
          // not (then their reading fails with the abort): never a hang, nothing unhandled.
          const outcome = await client.generate({
            inputIds: prompt,
            sampling,
            routes: { recorded: 0 },
            signal: abort.signal,
            onAnswered: () => abort.abort(reason),
          }).then((generation) => generation, (error) => error);
          assert.ok(outcome === reason || (outcome.routes?.rows ?? 0) > 0, String(outcome));
          // The pool goes on: the next generation has its rows.
          const next = await client.generate({
            inputIds: prompt,
            sampling,
            routes: { recorded: 0 },
          });
          assert.ok((next.routes?.rows ?? 0) > 0);
        } finally {
          await client.close();
        }
      }
    } finally {
      await engine.close();
    }
  });
}

/** An SGLang client of the test's shape, on a server of `handler` (closed by `close`). */
function servedClient(handler: Deno.ServeHandler, httpWorker: EngineHttpWorker | undefined) {
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, handler);
  const client = new SglangClient(`http://127.0.0.1:${server.addr.port}`, {
    connections: 1,
    timeoutMs: 10_000,
    moe: { ...SHAPE, denseLayers: [] },
    httpWorker,
  });
  return {
    client,
    close: async () => {
      await client.close();
      await server.shutdown();
    },
  };
}

/** Sampling for a 9-token prompt, stopping at 14. */
const SMALL_SAMPLING = samplingParams({ maxTokens: 8 }, {
  promptLength: 9,
  contextLength: 4096,
  stopIds: [14],
});

Deno.test("SGLang rows that do not decode, after the answer went on, fail the generation alike on both transports", async () => {
  const outcomes = [];
  for (const { httpWorker } of TRANSPORTS) {
    const next = random(7);
    const answer = {
      output_ids: [11, 12, 13, 14],
      meta_info: {
        finish_reason: { type: "stop", matched: 14 },
        output_token_logprobs: [11, 12, 13, 14].map((id) => [-0.5, id, null]),
        // 12 rows, one expert past the model's 40.
        routed_experts: sglangRoutes(12, next, 300),
      },
    };
    const { client, close } = servedClient(() => Response.json(answer), httpWorker);
    try {
      const told: number[][] = [];
      outcomes.push(
        await client.generate({
          inputIds: [1, 2, 3, 4, 5, 6, 7, 8, 9],
          sampling: SMALL_SAMPLING,
          routes: { recorded: 0 },
          onAnswered: (early) => told.push(early.outputIds),
        }).then(
          () => ({ error: "none" }),
          (error) => ({ error: `${error.name}: ${error.message.replace(/:\d+/, ":port")}` }),
        ),
      );
      // Told, then failed: on the worker its rows were decoded after the answer went on.
      assert.deepStrictEqual(told, [[11, 12, 13, 14]]);
    } finally {
      await close();
    }
  }
  assert.notEqual(outcomes[0].error, "none");
  assert.deepStrictEqual(outcomes[1], outcomes[0]);
});

/** An SGLang stream of `events` (each a chunk, or raw SSE text), its bytes cut at `cuts`. */
function cutStream(text: string, next: () => number): Response {
  const bytes = new TextEncoder().encode(text);
  const pieces: Uint8Array[] = [];
  for (let at = 0; at < bytes.length;) {
    const size = 1 + Math.floor(next() * (next() < 0.2 ? 4 : 4096));
    pieces.push(bytes.slice(at, at + size));
    at += size;
  }
  return new Response(
    new ReadableStream({
      pull(controller) {
        const piece = pieces.shift();
        if (piece) controller.enqueue(piece);
        else controller.close();
      },
    }),
    { headers: { "content-type": "text/event-stream" } },
  );
}

Deno.test("an SGLang stream cut anywhere, with CRLFs, comments and decoys, reads the same on both transports", async () => {
  for (let seed = 0; seed < 24; seed++) {
    const outcomes = [];
    for (const { httpWorker } of TRANSPORTS) {
      const next = random(500 + seed);
      const routes = sglangRoutes(12, next, next() < 0.15 ? 300 : SHAPE.experts);
      const ids = [11, 12, 13, 14];
      const chunks = ids.map((_, i) => ({
        output_ids: ids.slice(0, i + 1),
        meta_info: {
          completion_tokens: i + 1,
          finish_reason: i === ids.length - 1 ? { type: "stop", matched: 14 } : null,
          output_token_logprobs: ids.slice(0, i + 1).map((id) => [-0.0, id, "é€😀"]),
          ...(i === ids.length - 1 ? { routed_experts: routes } : {}),
          ...(i === 1 && next() < 0.5 ? { note: routes } : {}),
        },
      }));
      const line = next() < 0.5 ? "\r\n" : "\n";
      const text = chunks.map((chunk) =>
        `: ping${line}data: ${JSON.stringify(chunk)}${line}${line}`
      )
        .join("") + `data: [DONE]${line}${line}`;
      const { client, close } = servedClient(
        (request) =>
          new URL(request.url).pathname === "/abort_request"
            ? new Response(null)
            : cutStream(text, next),
        httpWorker,
      );
      try {
        const streamed: number[] = [];
        const outcome = await client.generate({
          inputIds: [1, 2, 3, 4, 5, 6, 7, 8, 9],
          sampling: SMALL_SAMPLING,
          routes: { recorded: 0 },
          onTokens: (tokens) => streamed.push(...tokens.ids),
        }).then(
          (generation) => ({ generation: kept(generation), streamed }),
          // The engine's address is each server's own.
          (error) => ({ error: `${error.name}: ${error.message.replace(/:\d+/, ":port")}` }),
        );
        if (httpWorker && "generation" in outcome) {
          assert.ok(outcome.generation.routes, "the worker read the rows");
        }
        outcomes.push(outcome);
      } finally {
        await close();
      }
    }
    assert.deepStrictEqual(outcomes[1], outcomes[0], `seed ${seed}`);
  }
});

Deno.test("expertDtype() of the test shape is uint8, as the asks say", () => {
  assert.equal(expertDtype(SHAPE), "uint8");
});

Deno.test("an answer nested deeper than the stack goes on as it came", () => {
  const routes = sglangRoutes(2, random(9));
  const deep = "[".repeat(200_000) + "]".repeat(200_000);
  const text = `{"deep":${deep},"meta_info":{"routed_experts":"${routes}"}}`;
  // It parses (so what gives up is the comparison past the stack, not the parse) …
  assert.equal(typeof JSON.parse(text).meta_info.routed_experts, "string");
  // … and goes on unchanged, for the client to decode.
  assert.equal(takeRoutes(text, SGLANG, "n"), null);
});
