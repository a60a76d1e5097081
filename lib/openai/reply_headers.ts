/**
 * The headers of every reply of OpenAI's protocols (Chat Completions, the Responses API): the
 * request id under both names their clients read.
 *
 * @module
 */

/**
 * The request id as `request-id` and as `x-request-id`, the name the OpenAI SDKs read.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { openaiReplyHeaders } from "./reply_headers.ts";
 * assert.deepEqual(openaiReplyHeaders("req_1"), { "request-id": "req_1", "x-request-id": "req_1" });
 * ```
 */
export function openaiReplyHeaders(requestId: string): Record<string, string> {
  return { "request-id": requestId, "x-request-id": requestId };
}
