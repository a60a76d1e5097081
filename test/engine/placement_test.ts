/**
 * The gateway's placement over engine workers, on engines of the test's own: bounded load,
 * failover after the tokens shown (whole arrays), each attempt told as it will be returned
 * (`onAnswered`), what does not fail over, release.
 */
import assert from "node:assert/strict";
import {
  type Engine,
  EngineRejectedError,
  EngineUnavailableError,
  type GenerateRequest,
  type Generation,
  PlacedEngine,
  PromptIds,
} from "../../lib/engine/mod.ts";

const SAMPLING = {
  max_new_tokens: 10,
  stop_token_ids: [],
  skip_special_tokens: false,
  no_stop_trim: true,
  spaces_between_special_tokens: false,
} as const;

/** A generation of `ids`, the `i`th logprob `-(i + 1)/10`, under version `v`. */
function generation(ids: number[], v = "v1"): Generation {
  return {
    rid: "r",
    outputIds: ids,
    logprobs: ids.map((_, i) => -(i + 1) / 10),
    finish: { type: "stop", matched: null },
    weightVersions: [v],
    versionSpans: [{ version: v, start: 0, end: ids.length }],
    aborts: 0,
    engineMs: 1,
    engineReportedMs: 1,
  };
}

/** An engine whose generations `answer` decides, every request kept. */
function engine(url: string, answer: (req: GenerateRequest) => Promise<Generation>) {
  const requests: GenerateRequest[] = [];
  const fake: Engine & { requests: GenerateRequest[] } = {
    url,
    requests,
    generate: (req) => (requests.push(req), answer(req)),
    close: () => Promise.resolve(),
  };
  return fake;
}

const healthy = () => Promise.resolve(true);

/** Engines as placement's workers. */
function workersOf(...engines: Engine[]) {
  return engines.map((engine) => ({ url: engine.url, engine }));
}

Deno.test("a new chain goes beside its near chain while that worker runs fewer than 1.25× the average", async () => {
  // Generations run until the gate opens.
  const gate = Promise.withResolvers<void>();
  const held = (url: string) =>
    engine(url, async () => {
      await gate.promise;
      return generation([1]);
    });
  const workers = [held("http://a"), held("http://b")];
  const placed = new PlacedEngine(workersOf(...workers), {
    healthIntervalMs: 60_000,
    probe: healthy,
  });
  try {
    const request = (chain: string, near?: string) =>
      placed.generate({
        inputIds: [1, 2],
        sampling: SAMPLING,
        routingKey: "session",
        chain: { id: chain, near: near ?? null },
      });
    const running = [request("c0")];
    const home = placed.placementOf("c0")!;
    // One running: the bound is ceil(1.25 × 2 / 2) = 2, so c1 joins c0.
    running.push(request("c1", "c0"));
    assert.equal(placed.placementOf("c1"), home);
    // Two running there: the bound is ceil(1.25 × 3 / 2) = 2, so c2 goes to the other worker.
    running.push(request("c2", "c0"));
    assert.notEqual(placed.placementOf("c2"), home);
    assert.deepEqual(placed.workers().map((w) => w.running).sort(), [1, 2]);
    gate.resolve();
    await Promise.all(running);
    // A placed chain stays where it is, whatever the load.
    await placed.generate({ inputIds: [3], sampling: SAMPLING, chain: { id: "c2" } });
    assert.notEqual(placed.placementOf("c2"), home);
    placed.release(["c0", "c1", "c2"]);
    assert.deepEqual(placed.workers().map((w) => w.chains), [0, 0]);
  } finally {
    await placed.close();
  }
});

Deno.test("a worker that dies after showing tokens: the next one continues after them, the whole output joined", async () => {
  const shown: number[][] = [];
  // b is drained at first, so the chain is placed on a; it is back by the time a dies.
  const up = new Set(["http://a"]);
  const probe = (url: string) => Promise.resolve(up.has(url));
  let placed: PlacedEngine | null = null;
  const dying = engine("http://a", async (req) => {
    req.onTokens!({ ids: [11, 12], logprobs: [-0.1, -0.2], weightVersion: "v1" });
    req.onTokens!({ ids: [13], logprobs: [-0.3], weightVersion: "v2" });
    up.add("http://b");
    await placed!.checkHealth();
    throw new EngineUnavailableError("Engine at http://a is unreachable");
  });
  const next = engine("http://b", (req) => {
    req.onTokens!({ ids: [14, 15], logprobs: [-0.1, -0.2], weightVersion: "v2" });
    return Promise.resolve(generation([14, 15], "v2"));
  });
  placed = new PlacedEngine(workersOf(dying, next), { healthIntervalMs: 60_000, probe });
  try {
    await placed.checkHealth();
    const rid = "0123456789abcdef0123456789abcdef";
    const result = await placed.generate({
      rid,
      inputIds: PromptIds.from([1, 2, 3]),
      sampling: SAMPLING,
      chain: { id: "c0", after: "previous-turn" },
      onTokens: (tokens) => shown.push([...tokens.ids]),
    });
    assert.equal(result.worker, "http://b");
    assert.equal(result.failovers, 1);
    assert.equal(result.rid, rid);
    assert.deepEqual(result.outputIds, [11, 12, 13, 14, 15]);
    assert.deepEqual(result.logprobs, [-0.1, -0.2, -0.3, -0.1, -0.2]);
    assert.deepEqual(result.versionSpans, [
      { version: "v1", start: 0, end: 2 },
      { version: "v2", start: 2, end: 5 },
    ]);
    assert.deepEqual(result.weightVersions, ["v1", "v2"]);
    // The continuation: prompt + the tokens shown, for the tokens left, under the same request id
    // (on another engine), and no turn of an engine session.
    const [continued] = next.requests;
    assert.deepEqual((continued.inputIds as PromptIds).toArray(), [1, 2, 3, 11, 12, 13]);
    assert.equal(continued.sampling.max_new_tokens, 7);
    assert.equal(continued.rid, rid);
    assert.equal(continued.chain?.after, null);
    assert.deepEqual(shown, [[11, 12], [13], [14, 15]]);
    assert.deepEqual(placed.workers().map((w) => [w.healthy, w.chains]), [[false, 0], [true, 1]]);
    assert.equal(placed.placementOf("c0"), "http://b");
  } finally {
    await placed.close();
  }
});

Deno.test("a worker that answers, then fails reading its rows: each attempt is told as placement returns it", async () => {
  const up = new Set(["http://a"]);
  const probe = (url: string) => Promise.resolve(up.has(url));
  let placed: PlacedEngine | null = null;
  const told: Omit<Generation, "routes">[] = [];
  const failing = engine("http://a", async (req) => {
    req.onTokens!({ ids: [11, 12], logprobs: [-0.1, -0.2], weightVersion: "v1" });
    req.onAnswered!(generation([11, 12]));
    up.add("http://b");
    await placed!.checkHealth();
    throw new EngineUnavailableError("The engine's routed experts do not decode");
  });
  const next = engine("http://b", (req) => {
    req.onTokens!({ ids: [14], logprobs: [-0.1], weightVersion: "v1" });
    req.onAnswered!(generation([14]));
    return Promise.resolve(generation([14]));
  });
  placed = new PlacedEngine(workersOf(failing, next), { healthIntervalMs: 60_000, probe });
  try {
    await placed.checkHealth();
    const result = await placed.generate({
      inputIds: PromptIds.from([1, 2, 3]),
      sampling: SAMPLING,
      routes: { recorded: 0 },
      onTokens: () => {},
      onAnswered: (early) => told.push(early),
    });
    const settled = ({ engineMs: _, ...rest }: Omit<Generation, "routes">) => rest;
    assert.equal(told.length, 2);
    assert.deepEqual(told.map((early) => [early.worker, early.failovers, early.outputIds]), [
      ["http://a", 0, [11, 12]],
      ["http://b", 1, [11, 12, 14]],
    ]);
    // The last telling is the generation returned, but for the time it took.
    assert.deepEqual(settled(told[1]), settled(result));
  } finally {
    await placed.close();
  }
});

Deno.test("a refused request does not fail over, and with no worker left the generation is unavailable", async () => {
  const refusing = engine("http://a", () => Promise.reject(new EngineRejectedError("too long")));
  const placed = new PlacedEngine(workersOf(refusing), {
    healthIntervalMs: 60_000,
    probe: healthy,
  });
  try {
    await assert.rejects(
      placed.generate({ inputIds: [1], sampling: SAMPLING, chain: { id: "c0" } }),
      EngineRejectedError,
    );
    assert.equal(placed.workers()[0].healthy, true);
  } finally {
    await placed.close();
  }
  const down = engine("http://a", () => Promise.reject(new EngineUnavailableError("unreachable")));
  const alone = new PlacedEngine(workersOf(down), { healthIntervalMs: 60_000, probe: healthy });
  try {
    await assert.rejects(
      alone.generate({ inputIds: [1], sampling: SAMPLING, chain: { id: "c0" } }),
      EngineUnavailableError,
    );
    assert.equal(alone.workers()[0].healthy, false);
    // Its health check passes: it takes generations again.
    await alone.checkHealth();
    assert.equal(alone.workers()[0].healthy, true);
  } finally {
    await alone.close();
  }
});
