/**
 * The process's memory and its caches on `/metrics`: each cache's bytes follow what it holds
 * (never past its capacity, back down as entries go), its lookups count hits and misses, and a
 * real gateway's scrape shows them after an episode.
 */
import Anthropic from "@anthropic-ai/sdk";
import assert from "node:assert/strict";
import { memoryShares, WeightedLru } from "../../lib/cache/mod.ts";
import {
  createMetrics,
  memorySampler,
  renderExposition,
  workerFamilies,
  workersToShow,
} from "../../lib/metrics/mod.ts";
import { ADMIN_TOKEN, startGateway } from "../_gateway.ts";
import { cacheKey } from "../../lib/session/mod.ts";
import { countable, parseExposition, seriesId } from "../_prometheus.ts";

Deno.test("a weighted cache's bytes are its entries' sizes, whatever it evicts, and it counts hits and misses", () => {
  // Units in characters, bytes twice that: the strings' two-byte upper bound.
  const cache = new WeightedLru<string, string>(
    2000,
    (key, value) => 2 * (key.length + value.length),
    (key, value) => key.length + value.length,
  );
  const held = new Map<string, string>();
  let seed = 7;
  const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31);
  for (let i = 0; i < 5000; i++) {
    const key = `k${next() % 200}`;
    if (next() % 3 === 0) {
      cache.delete(key);
      held.delete(key);
    } else if (next() % 2 === 0) {
      const value = "x".repeat(next() % 300);
      cache.set(key, value);
      held.set(key, value);
    } else {
      cache.get(key);
    }
    const stats = cache.stats();
    assert.ok(stats.bytes <= stats.capacity, `bytes ${stats.bytes}`);
    assert.equal(stats.bytes, 2 * stats.held);
  }
  // What it still holds is what its bytes count: every key it answers for.
  let bytes = 0;
  for (const [key] of held) {
    const value = cache.get(key);
    if (value !== undefined) bytes += 2 * (key.length + value.length);
  }
  const { hits, misses, bytes: counted } = cache.stats();
  assert.equal(counted, bytes);
  assert.ok(hits > 0 && misses > 0);
});

Deno.test("the sampler writes memory and each cache's stats, and counts lookups by what was added", async () => {
  const metrics = createMetrics();
  let stats = { held: 10, capacity: 100, bytes: 40, hits: 3, misses: 1 };
  const sample = memorySampler(
    metrics,
    { chains: () => stats },
    () => ({ rss: 5000, heapUsed: 300, heapTotal: 400, external: 20 }),
  );
  sample();
  stats = { held: 20, capacity: 100, bytes: 80, hits: 5, misses: 4 };
  sample();
  const [worker] = workersToShow(metrics.registry, { host: "h", worker: 0 }, []);
  const parsed = await parseExposition(
    renderExposition(workerFamilies(metrics.registry, [worker])),
  );
  const value = (name: string, labels: Record<string, string>) =>
    (parsed[name].data as { labels: Record<string, string>; value: number }[])
      .find((series) =>
        seriesId(name, series.labels) === seriesId(name, { ...labels, host: "h", worker: "0" })
      )!
      .value;
  assert.deepEqual(
    [
      value("rollout_gateway_process_memory_bytes", { kind: "rss" }),
      value("rollout_gateway_process_memory_bytes", { kind: "heap_used" }),
      value("rollout_gateway_cache_bytes", { cache: "chains" }),
      value("rollout_gateway_cache_held", { cache: "chains" }),
      value("rollout_gateway_cache_capacity", { cache: "chains" }),
      value("rollout_gateway_cache_lookups_total", { cache: "chains", result: "hit" }),
      value("rollout_gateway_cache_lookups_total", { cache: "chains", result: "miss" }),
      value("rollout_gateway_cache_bytes", { cache: "identities" }),
    ],
    [5000, 300, 80, 20, 100, 5, 4, 0],
  );
});

Deno.test("a real gateway's scrape shows its memory and its caches after an episode, each cache's capacity its share of the budget", async () => {
  const gw = await startGateway({ script: () => "Done.", env: { MEMORY_BUDGET_MB: "512" } });
  try {
    const { token } = await gw.openSession();
    const client = gw.anthropic(token);
    const messages: Anthropic.MessageParam[] = [{ role: "user", content: "First." }];
    const first = await client.messages.create({ model: "m", max_tokens: 16, messages });
    messages.push({ role: "assistant", content: first.content }, {
      role: "user",
      content: "Next.",
    });
    await client.messages.create({ model: "m", max_tokens: 16, messages });
    const response = await gw.fetch("/metrics", {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    const parsed = await parseExposition(await response.text());
    const series = (name: string) =>
      new Map(
        (parsed[name].data as { labels: Record<string, string>; value: number }[]).map((s) => [
          Object.entries(s.labels).filter(([k]) => k !== "host" && k !== "worker").map(([, v]) => v)
            .join(","),
          s.value,
        ]),
      );
    const memory = series("rollout_gateway_process_memory_bytes");
    assert.ok(memory.get("rss")! > memory.get("heap_used")! && memory.get("heap_used")! > 0);
    const bytes = series("rollout_gateway_cache_bytes");
    const held = series("rollout_gateway_cache_held");
    const capacity = series("rollout_gateway_cache_capacity");
    // The chain cache holds the episode's chain: its prompt buffer, at least a byte a token.
    assert.ok(held.get("chains")! > 0 && bytes.get("chains")! >= held.get("chains")!);
    const shares = memoryShares(512).caches;
    // The main isolate's sections are the test's shared tokenizer's (loaded once for every test
    // gateway); no image cache without vision.
    const { worker_sections: workers, sections: _sections, ...main } = Object.fromEntries(capacity);
    assert.deepEqual(main, {
      chains: shares.chains,
      identities: shares.identities,
      recurring_fields: shares.recurringFields,
      settings: shares.settings,
      images: 0,
    });
    // Each tokenizer worker that answered a job brings its own share.
    assert.equal(workers % shares.sections, 0, `${workers}`);
    for (const [cache, held] of bytes) assert.ok(held <= capacity.get(cache)!, cache);
    assert.ok(bytes.get("identities")! > 0);
    const lookups = series("rollout_gateway_cache_lookups_total");
    // The second turn found its chain cached.
    assert.ok(lookups.get("chains,hit")! >= 1, JSON.stringify([...lookups]));
    // Sampled families are not among what a request moves.
    assert.ok(![...countable(parsed).keys()].some((id) => id.startsWith("rollout_gateway_cache_")));
  } finally {
    await gw.close();
  }
});

Deno.test("a session closed or deleted leaves the caches: its chains and its conversations' identities go, another session's stay", async () => {
  const gw = await startGateway({ script: () => "Done." });
  try {
    const sessions = [await gw.openSession(), await gw.openSession(), await gw.openSession()];
    for (const { token } of sessions) {
      const messages: Anthropic.MessageParam[] = [{ role: "user", content: "First." }];
      const first = await gw.anthropic(token).messages.create({
        model: "m",
        max_tokens: 16,
        messages,
      });
      messages.push({ role: "assistant", content: first.content }, {
        role: "user",
        content: "On.",
      });
      await gw.anthropic(token).messages.create({ model: "m", max_tokens: 16, messages });
      // A sub-agent: a second chain and a second conversation.
      await gw.anthropic(token).messages.create(
        { model: "m", max_tokens: 16, messages: [{ role: "user", content: "Search." }] },
        { headers: { "x-claude-code-agent-id": "agent-1" } },
      );
    }
    const cached = (id: string) =>
      ["c0", "c1"].filter((chain) => gw.deps.cache.latest(cacheKey({ sessionId: id, id: chain })));
    assert.deepEqual(sessions.map(({ id }) => cached(id)), [["c0", "c1"], ["c0", "c1"], [
      "c0",
      "c1",
    ]]);
    const identities = gw.deps.identities.stats().bytes;
    const chains = gw.deps.cache.stats().bytes;
    const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };
    const [closing, deleting, running] = sessions;
    assert.equal(
      (await gw.fetch(`/sessions/${closing.id}/close`, { method: "POST", headers: admin })).status,
      200,
    );
    assert.equal(
      (await gw.fetch(`/sessions/${deleting.id}`, { method: "DELETE", headers: admin })).status,
      204,
    );
    assert.deepEqual(sessions.map(({ id }) => cached(id)), [[], [], ["c0", "c1"]]);
    // What is left is the running session's: a third of each.
    const third = (bytes: number) => Math.round(bytes / 3);
    assert.ok(Math.abs(gw.deps.cache.stats().bytes - third(chains)) < third(chains) / 2);
    assert.ok(
      Math.abs(gw.deps.identities.stats().bytes - third(identities)) < third(identities) / 2,
    );
    // The running session's next turn still finds its chain cached.
    const hits = gw.deps.cache.stats().hits;
    await gw.anthropic(running.token).messages.create(
      {
        model: "m",
        max_tokens: 16,
        messages: [{ role: "user", content: "Search." }, { role: "assistant", content: "Done." }, {
          role: "user",
          content: "More.",
        }],
      },
      { headers: { "x-claude-code-agent-id": "agent-1" } },
    );
    assert.ok(gw.deps.cache.stats().hits > hits);
  } finally {
    await gw.close();
  }
});
