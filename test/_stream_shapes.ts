/** What the protocols' stream shape tests share: their bytes read as text, a failure's answer. */
import type { ErrorAnswer } from "../lib/errors/mod.ts";

/** The bytes a shape writes, as the text a client reads. */
export function text(chunks: readonly Uint8Array[]): string {
  return chunks.map((chunk) => new TextDecoder().decode(chunk)).join("");
}

/** The answer of an engine lost after a stream started (retryable, 529). */
export const ENGINE_DOWN: ErrorAnswer = {
  code: "engine_unavailable",
  status: 529,
  type: "overloaded_error",
  message: "engine down",
  retry: true,
};
