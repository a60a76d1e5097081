/**
 * One budget for a process's caches: each cache, driven well past its share by a seeded
 * workload, never holds more bytes than its share of `MEMORY_BUDGET_MB` (checked after every
 * operation), and does fill it.
 */
import assert from "node:assert/strict";
import {
  BUDGET_SHARES,
  defaultMemoryBudgetMb,
  heapFlags,
  memoryShares,
  RecurringFields,
} from "../../lib/cache/mod.ts";
import { ChainCache } from "../../lib/kv/mod.ts";
import { IdentityMemo } from "../../lib/chat/mod.ts";
import { ImageBytes } from "../../lib/session/image_bytes.ts";
import { type CachedChain, cachedChainBytes, cachedChainTokens } from "../../lib/session/mod.ts";
import { PromptIds } from "../../lib/engine/mod.ts";
import { SectionCache } from "../../lib/tokenizer/section_cache.ts";
import {
  budgetSettingsCache,
  messageIdentities,
  type MessageParam,
  settingsCacheStats,
  settingsDigest,
} from "../../lib/anthropic/mod.ts";
import { Prng } from "../_fuzz/prng.ts";

/** An integer in [min, max]. */
const between = (prng: Prng, min: number, max: number) => min + prng.int(max - min + 1);

/** A budget of 2 MiB: shares small enough to pass many times over in a test. */
const SHARES = memoryShares(2).caches;
const GIB = 1024 ** 3;

/** Runs `step` `times` times, checking after each that `bytes()` is within `share`. */
function holdsWithin(share: number, bytes: () => number, step: (i: number) => void, times = 400) {
  let most = 0;
  for (let i = 0; i < times; i++) {
    step(i);
    const now = bytes();
    assert.ok(now <= share, `step ${i}: ${now} bytes, share ${share}`);
    most = Math.max(most, now);
  }
  // The workload passed the share: the cache evicted to stay in it, and was used up to it.
  assert.ok(most > share / 2, `at most ${most} of ${share} bytes`);
}

Deno.test("memoryShares() gives each cache its share in bytes, and the heap half the budget", () => {
  const shares = memoryShares(1024);
  for (const [name, share] of Object.entries(BUDGET_SHARES)) {
    assert.equal(shares.caches[name as keyof typeof BUDGET_SHARES], Math.floor(share * GIB), name);
  }
  // The main isolate's caches and two tokenizer workers' sections: 37% of the budget, the rest
  // the baseline (about 300 MiB) and requests in flight.
  const total = Object.values(shares.caches).reduce((sum, bytes) => sum + bytes, 0) +
    2 * shares.caches.sections;
  assert.ok(total <= 0.37 * GIB, `${total}`);
  assert.equal(shares.heapMiB, 512);
  assert.equal(memoryShares(384).heapMiB, 256, "never under 256 MiB");
  assert.equal(heapFlags(memoryShares(2048)), "--max-old-space-size=1024");
});

Deno.test("defaultMemoryBudgetMb(): 1024 MiB a process, less when the machine's half is less", () => {
  assert.deepEqual(
    [
      defaultMemoryBudgetMb(64 * GIB, 32),
      defaultMemoryBudgetMb(24 * GIB, 2),
      defaultMemoryBudgetMb(16 * GIB, 16),
      defaultMemoryBudgetMb(1 * GIB, 1),
    ],
    [1024, 1024, 512, 512],
  );
  assert.equal(defaultMemoryBudgetMb(1 * GIB, 8), 384, "never under the baseline");
});

Deno.test("the chain cache's bytes never pass its share", () => {
  const prng = new Prng(11);
  const cache = new ChainCache<CachedChain>(
    SHARES.chains,
    (chain, key) => 2 * key.length + cachedChainBytes(chain),
    cachedChainTokens,
  );
  holdsWithin(SHARES.chains, () => cache.bytes, (i) => {
    const tokens = Array.from({ length: between(prng, 1, 6_000) }, () => between(prng, 0, 151_000));
    const messages = Array.from(
      { length: between(prng, 1, 40) },
      (_, m) => `m${i}-${m}`.repeat(30),
    );
    const chain = {
      prompt: PromptIds.from(tokens),
      conversation: { start: "start", messages },
    } as unknown as CachedChain;
    cache.put(`session-${between(prng, 0, 60)}/c0`, String(i).padStart(20, "0"), chain);
  });
});

Deno.test("the identity memo's bytes never pass its share", () => {
  const prng = new Prng(12);
  const memo = new IdentityMemo(SHARES.identities);
  const conversations = new Map<string, MessageParam[]>();
  holdsWithin(SHARES.identities, () => memo.stats().bytes, (i) => {
    const key = `conversation-${between(prng, 0, 30)}`;
    const messages = conversations.get(key) ?? [{ role: "user", content: "Fix it." }];
    messages.push(
      { role: "assistant", content: `Step ${i}: ${"x".repeat(between(prng, 10, 4_000))}` },
      { role: "user", content: `ok ${i}` },
    );
    conversations.set(key, messages);
    memo.identities(key, structuredClone(messages), (known) => messageIdentities(messages, known));
  });
});

Deno.test("the image bytes' cache never passes its share", () => {
  const prng = new Prng(13);
  const images = new ImageBytes(SHARES.images);
  holdsWithin(SHARES.images, () => images.stats().bytes, (i) => {
    images.remember(`digest-${i}`, "A".repeat(between(prng, 100, 40_000)));
    images.get(`digest-${between(prng, 0, i)}`);
  });
});

Deno.test("the settings digests' cache never passes its share", () => {
  const prng = new Prng(14);
  budgetSettingsCache(SHARES.settings);
  try {
    holdsWithin(SHARES.settings, () => settingsCacheStats().bytes, (i) => {
      settingsDigest({
        model: "m",
        tools: [{ name: `tool${i}`, description: "d".repeat(between(prng, 10, 2_000)) }],
      });
    });
  } finally {
    budgetSettingsCache(memoryShares(1024).caches.settings);
  }
});

Deno.test("a tokenizer isolate's section cache never passes its share", () => {
  const prng = new Prng(15);
  const sections = new SectionCache(
    (text) => Array.from({ length: Math.ceil(text.length / 4) }, (_, i) => i),
    { minChars: 64, capacityBytes: SHARES.sections },
  );
  holdsWithin(SHARES.sections, () => sections.stats().bytes, (i) => {
    const text = `section ${i} ${between(prng, 0, 9)}`.padEnd(between(prng, 64, 6_000), "é");
    sections.encode(text, between(prng, 0, 3));
  });
});

Deno.test("the recurring fields' bytes never pass their share", () => {
  const prng = new Prng(16);
  const fields = new RecurringFields({
    capacityBytes: SHARES.recurringFields,
    minChars: 16,
    maxValues: 64,
    accepts: () => true,
  });
  holdsWithin(SHARES.recurringFields, () => fields.stats().bytes, (i) => {
    const tools = [{ name: `tool${i}`, description: "d".repeat(between(prng, 100, 1_200)) }];
    fields.parse(JSON.stringify({ tools, messages: [i] }), ["tools"]);
  });
});
