/**
 * One process's memory budget (`MEMORY_BUDGET_MB`) and what each of its caches may hold of it.
 * Every cache counts bytes and drops its least recently used entries past its share, so what the
 * caches hold together never passes their shares' sum (37% of it with two tokenizer workers),
 * whatever the load; the rest is the garbage the collector leaves before it runs and the working
 * memory of requests in flight. Besides it, a process has its baseline: its isolates, each that
 * encodes with the tokenizer loaded (about 340 MiB with two tokenizer workers). A cache miss costs
 * time, never correctness: the store has everything a cache holds. docs/DESIGN.md §10.4 gives the
 * figures.
 *
 * @module
 */

/** Shares of the budget, by cache: the chain cache's token arrays above all (T4's fast turn). */
export const BUDGET_SHARES = Object.freeze({
  /** Recent chains: their prompt ids' digits, token arrays and message identities. */
  chains: 0.12,
  /** Each conversation's last request and its messages' identities. */
  identities: 0.1,
  /** Image bytes (base64) by digest, for the images a later turn sends the engine again. */
  images: 0.06,
  /** Held values of recurring top-level fields (tools, system prompts). */
  recurringFields: 0.01,
  /** Digests of requests' settings, by their stable JSON. */
  settings: 0.005,
  /** Long text sections' tokens, in each isolate that encodes (each tokenizer worker its own). */
  sections: 0.025,
});

/** A cache with a share of the budget. */
export type BudgetedCache = keyof typeof BUDGET_SHARES;

/** What a process's budget gives. */
export interface MemoryShares {
  /** The budget, in bytes. */
  readonly budget: number;
  /** The most bytes each cache holds (`sections`: each encoding isolate's). */
  readonly caches: Readonly<Record<BudgetedCache, number>>;
  /**
   * The V8 old-space limit of each of the process's isolates, in MiB (`--max-old-space-size`):
   * half the budget, so the collector runs before the budget is reached rather than after, and
   * never less than {@linkcode MIN_HEAP_MIB} (a limit reached is a crash, not a slow turn).
   */
  readonly heapMiB: number;
}

/** The least old space an isolate gets, in MiB: a large turn's working set fits in it. */
export const MIN_HEAP_MIB = 256;

/** The smallest budget accepted, in MiB: the baseline of a process with its tokenizer. */
export const MIN_BUDGET_MB = 384;

/** The default budget's most, in MiB. */
export const DEFAULT_BUDGET_MB = 1024;

const MIB = 1024 * 1024;

/**
 * What a budget of `budgetMb` MiB gives each cache.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { memoryShares } from "./memory_budget.ts";
 * const shares = memoryShares(1024);
 * assert.equal(shares.budget, 1024 * 1024 * 1024);
 * assert.equal(shares.caches.chains, Math.floor(0.12 * shares.budget));
 * assert.equal(shares.heapMiB, 512);
 * ```
 */
export function memoryShares(budgetMb: number): MemoryShares {
  const budget = budgetMb * MIB;
  const caches = Object.fromEntries(
    Object.entries(BUDGET_SHARES).map(([name, share]) => [name, Math.floor(share * budget)]),
  ) as Record<BudgetedCache, number>;
  return Object.freeze({
    budget,
    caches: Object.freeze(caches),
    heapMiB: Math.max(MIN_HEAP_MIB, Math.floor(budgetMb / 2)),
  });
}

/**
 * The V8 flags that hold each isolate of a process to `shares`' heap limit, for its command line
 * or `DENO_V8_FLAGS` (V8's limits are fixed as an isolate starts: a process cannot lower its own).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { heapFlags, memoryShares } from "./memory_budget.ts";
 * assert.equal(heapFlags(memoryShares(1024)), "--max-old-space-size=512");
 * ```
 */
export function heapFlags(shares: MemoryShares): string {
  return `--max-old-space-size=${shares.heapMiB}`;
}

/**
 * The default budget of each of `workers` processes on a machine of `totalBytes` of memory:
 * {@linkcode DEFAULT_BUDGET_MB}, or half the machine shared by the workers when that is less, and
 * never under {@linkcode MIN_BUDGET_MB}.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { defaultMemoryBudgetMb } from "./memory_budget.ts";
 * const GIB = 1024 ** 3;
 * assert.equal(defaultMemoryBudgetMb(24 * GIB, 2), 1024);
 * assert.equal(defaultMemoryBudgetMb(8 * GIB, 8), 512);
 * assert.equal(defaultMemoryBudgetMb(2 * GIB, 4), 384);
 * ```
 */
export function defaultMemoryBudgetMb(totalBytes: number, workers: number): number {
  const half = Math.floor(totalBytes / 2 / Math.max(1, workers) / MIB);
  return Math.max(MIN_BUDGET_MB, Math.min(DEFAULT_BUDGET_MB, half));
}

/** The machine's memory in bytes (`Deno.systemMemoryInfo`), or `null` where it cannot be read. */
export function machineMemory(): number | null {
  try {
    return Deno.systemMemoryInfo().total;
  } catch {
    return null;
  }
}
