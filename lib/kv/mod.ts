/**
 * Deno KV: keys, limits, atomic commits, chunked token blobs, blobs, leases and caches — what
 * every store needs. The stores that keep the domain's records live with them (`lib/session`'s
 * sessions, chains, turns and rewards; `lib/rollout`'s groups and jobs).
 *
 * @module
 */
export * from "./keys.ts";
export * from "./atomic.ts";
export * from "./chunked.ts";
export * from "./list_page.ts";
export * from "./cursor_seal.ts";
export * from "./chain_cache.ts";
export * from "./secrets.ts";
export * from "./lease.ts";
export * from "./blob.ts";
export * from "./metrics_store.ts";
export * from "./store.ts";
export * from "./key_codec.ts";
export * from "./postgres_store.ts";
export * from "./open_store.ts";
export * from "./copy_store.ts";
