/** Caches the domain shares: a map bounded by the weight of what it holds. @module */
export * from "./weighted_lru.ts";
export * from "./recurring_fields.ts";
