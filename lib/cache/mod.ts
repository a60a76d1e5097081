/** Caches the domain shares: a map bounded by the bytes it holds, and the budget they share. @module */
export * from "./weighted_lru.ts";
export * from "./memory_budget.ts";
export * from "./recurring_fields.ts";
export * from "./freed_memory.ts";
