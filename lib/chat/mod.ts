/** Canonical chat messages and the digests that identify a conversation's prefixes. @module */
export * from "./identity_memo.ts";
export * from "./message.ts";
export * from "./prefix_digest.ts";
