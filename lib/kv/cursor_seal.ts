/**
 * Listing cursors as clients see them: the store's own cursor with a MAC over it and the listing
 * it belongs to, so a cursor no listing handed out — made up, edited, or another listing's — is
 * refused (HTTP 400) instead of read by the store as a place to start. The key is a secret every
 * gateway process on one store shares, so a cursor from one process is good on any other.
 *
 * @module
 */
import { createHmac } from "node:crypto";
import { sameSecret } from "../timing/mod.ts";
import { InvalidCursorError } from "./list_page.ts";

/** Characters of the MAC (base64url, 128 bits). */
const MAC_CHARS = 22;

/**
 * Seals and opens the cursors of named listings under one secret.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { CursorSeal } from "./cursor_seal.ts";
 * import { InvalidCursorError } from "./list_page.ts";
 * const seal = new CursorSeal("a secret of the gateway's");
 * const sealed = seal.seal("sessions", "AQID")!;
 * assert.equal(seal.open("sessions", sealed), "AQID");
 * assert.throws(() => seal.open("sessions", "AQID"), InvalidCursorError);
 * assert.throws(() => seal.open("groups", sealed), InvalidCursorError);
 * ```
 */
export class CursorSeal {
  constructor(readonly secret: string) {}

  /** The cursor a client is given for `cursor` of `listing` (`null` stays `null`: the end). */
  seal(listing: string, cursor: string | null): string | null {
    return cursor === null ? null : `${cursor}.${this.#mac(listing, cursor)}`;
  }

  /**
   * The store's cursor of `listing` that `sealed` carries (`undefined` stays `undefined`: the
   * first page).
   *
   * @throws {InvalidCursorError} for a cursor this listing did not hand out.
   */
  open(listing: string, sealed: string | undefined): string | undefined {
    if (sealed === undefined) return undefined;
    const dot = sealed.lastIndexOf(".");
    const cursor = sealed.slice(0, dot);
    if (dot <= 0 || !sameSecret(sealed.slice(dot + 1), this.#mac(listing, cursor))) {
      throw new InvalidCursorError(sealed);
    }
    return cursor;
  }

  #mac(listing: string, cursor: string): string {
    return createHmac("sha256", this.secret).update(`cursor\n${listing}\n${cursor}`)
      .digest("base64url").slice(0, MAC_CHARS);
  }
}
