/**
 * Deno KV: keys, limits, chunked token blobs, and the stores that keep the domain's records
 * (defined in `lib/session`, `lib/chain`, `lib/rollout`) with the shapes only storage needs.
 *
 * @module
 */
export * from "./keys.ts";
export * from "./atomic.ts";
export * from "./records.ts";
export * from "./chunked.ts";
export * from "./list_page.ts";
export * from "./session_store.ts";
export * from "./chain_cache.ts";
export * from "./secrets.ts";
export * from "./lease.ts";
export * from "./blob.ts";
export * from "./rollout_store.ts";
export * from "./reward_store.ts";
export * from "./metrics_store.ts";
