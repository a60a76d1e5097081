/**
 * Gateway-wide secrets kept in KV, so every process sharing the KV agrees on them without
 * configuration.
 *
 * @module
 */
import { commit } from "./atomic.ts";
import { keys } from "./keys.ts";
import type { Store } from "./store.ts";

/**
 * The secret stored under `name`, created (32 random bytes, base64url) on first use.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { sharedSecret } from "./secrets.ts";
 * const kv = await Deno.openKv(":memory:");
 * const secret = await sharedSecret(kv, "signing");
 * assert.equal(await sharedSecret(kv, "signing"), secret); // every process reads the same one
 * kv.close();
 * ```
 */
export async function sharedSecret(kv: Store, name: string): Promise<string> {
  const key = keys.secret(name);
  for (;;) {
    const entry = await kv.get<string>(key);
    if (entry.value !== null) return entry.value;
    const fresh = btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(32))))
      .replaceAll("+", "-").replaceAll("/", "_").replaceAll("=", "");
    const result = await commit(() =>
      kv.atomic().check({ key, versionstamp: null }).set(key, fresh)
    );
    if (result.ok) return fresh;
  }
}
