/** Token chains: classification of requests, turn endings, and training arrays. @module */
export * from "./records.ts";
export * from "./classify.ts";
export * from "./turn.ts";
export * from "./token_chain.ts";
export * from "./route_spans.ts";
