/**
 * Bounds on every client value the gateway stores. A KV value holds at most 64 KiB, so a record
 * that kept growing with client input would one day fail to write — and a policy could learn to
 * escape a bad reward that way. Each bound is checked where the value enters (HTTP 400 naming
 * the field and its limit); records that hold several such values stay well below 64 KiB
 * together, and data that grows with an episode (chains, agents, large rewards) lives under
 * keys of its own.
 *
 * @module
 */
import type { CodedError } from "../errors/mod.ts";

/** Deepest nesting of arrays and objects in a JSON body (the body itself is depth 1). */
export const MAX_JSON_DEPTH = 128;
/** Longest agent id (`x-claude-code-agent-id`, `x-claude-code-parent-agent-id`), in characters. */
export const MAX_AGENT_ID_CHARS = 256;
/** Longest model name a request may give, in characters. */
export const MAX_MODEL_CHARS = 256;
/** Most tools one request may offer (a chain keeps the names of those its last request offered). */
export const MAX_TOOLS = 256;
/** Longest tool name, in characters. */
export const MAX_TOOL_NAME_CHARS = 128;
/** Most stop sequences one request may give. */
export const MAX_STOP_SEQUENCES = 64;
/** Longest stop sequence, in characters. */
export const MAX_STOP_SEQUENCE_CHARS = 1024;
/** Most chains one session may hold (main conversations, sub-agents, side requests). */
export const MAX_CHAINS_PER_SESSION = 1024;
/** Largest session metadata, in bytes of JSON. */
export const MAX_METADATA_BYTES = 16_384;
/** Longest metadata key, in characters. */
export const MAX_METADATA_KEY_CHARS = 256;
/**
 * Largest reward payload (score and evidence), in bytes of JSON: room for the test names of a
 * large suite. Payloads above {@linkcode REWARD_INLINE_BYTES} are kept as a chunked blob.
 */
export const MAX_REWARD_BYTES = 4 * 1024 * 1024;
/** Reward payloads up to this size (bytes of JSON) are kept in one KV value. */
export const REWARD_INLINE_BYTES = 16_384;

/**
 * A client value over one of the gateway's bounds (HTTP 400). `field` names it as the client
 * sent it (`metadata`, `tools`, `x-claude-code-agent-id`).
 */
export class LimitError extends RangeError implements CodedError {
  readonly code = "limit_exceeded" as const;
  constructor(readonly field: string, message: string) {
    super(`${field}: ${message}`);
    this.name = "LimitError";
  }
}

/**
 * A metadata value as text, for comparing and exporting: strings, numbers and booleans as
 * `String()` gives them, objects and arrays as JSON (whatever keys they hold: `String()` of
 * `{"toString": 1}` throws).
 */
export function metadataText(value: unknown): string {
  return typeof value === "object" && value !== null ? JSON.stringify(value) : String(value);
}

/** Bytes of `value` as JSON (UTF-8). */
export function jsonBytes(value: unknown): number {
  return new TextEncoder().encode(JSON.stringify(value) ?? "").length;
}

/**
 * Checks session metadata against its bounds.
 *
 * @throws {LimitError} naming `field` when it is too large or has too long a key.
 */
export function checkMetadata(metadata: Record<string, unknown>, field = "metadata"): void {
  for (const key of Object.keys(metadata)) {
    if (key.length > MAX_METADATA_KEY_CHARS) {
      throw new LimitError(
        field,
        `key "${
          key.slice(0, 32)
        }…" has ${key.length} characters, at most ${MAX_METADATA_KEY_CHARS}`,
      );
    }
  }
  const bytes = jsonBytes(metadata);
  if (bytes > MAX_METADATA_BYTES) {
    throw new LimitError(field, `${bytes} bytes of JSON, at most ${MAX_METADATA_BYTES}`);
  }
}
