/**
 * The storage port: the one narrow interface the domain keeps its records through. It is the
 * part of Deno KV's API the gateway uses, with Deno KV's meaning — keys are tuples ordered as KV
 * orders them, each write gets a versionstamp, and one atomic commit applies its mutations only
 * if every check holds (a check of `versionstamp: null` holds while the key is absent). A Deno KV
 * handle (`Deno.openKv`: a file, or `:memory:`) is a `Store` as it is; PostgreSQL is another
 * (`postgres_store.ts`), chosen by `STORE_URL` for a gateway tier on several machines.
 *
 * What each backend accepts beyond the port (value and commit sizes) is in docs/deploy.md; the
 * domain keeps to Deno KV's limits (`limits.ts`), which both accept.
 *
 * @module
 */

/** Options of a write. */
export interface StoreSetOptions {
  /** Milliseconds after which the entry may be gone (not sooner; backends drop it lazily). */
  readonly expireIn?: number;
}

/** One atomic commit being built: checks, then mutations, applied together or not at all. */
export interface StoreAtomic {
  /** Holds only if each key's versionstamp is the one given (`null`: the key is absent). */
  check(...checks: Deno.AtomicCheck[]): this;
  set(key: Deno.KvKey, value: unknown, options?: StoreSetOptions): this;
  delete(key: Deno.KvKey): this;
  /** Adds `n` (mod 2^64) to the `Deno.KvU64` at `key`, which an absent key starts at 0. */
  sum(key: Deno.KvKey, n: bigint): this;
  /** Applies it: `ok: false` when a check failed (nothing applied). */
  commit(): Promise<Deno.KvCommitResult | Deno.KvCommitError>;
}

/** The entries of a listing, and where the next page starts. */
export interface StoreListIterator<T> extends AsyncIterableIterator<Deno.KvEntry<T>> {
  /** The cursor after the last entry given: pass it to list on from there. */
  readonly cursor: string;
}

/** What the domain stores through. */
export interface Store {
  get<T = unknown>(key: Deno.KvKey): Promise<Deno.KvEntryMaybe<T>>;
  getMany<T extends readonly unknown[]>(
    keys: readonly [...{ [K in keyof T]: Deno.KvKey }],
  ): Promise<{ [K in keyof T]: Deno.KvEntryMaybe<T[K]> }>;
  /**
   * The entries under a prefix (not the prefix's own key), or from `start` to `end` (end
   * excluded), in key order or `reverse`d, `limit` at most, from `cursor`.
   *
   * @throws {TypeError} (when the listing is read) for a cursor that is not one of this selector.
   */
  list<T = unknown>(
    selector: Deno.KvListSelector,
    options?: Pick<Deno.KvListOptions, "limit" | "cursor" | "reverse" | "batchSize">,
  ): StoreListIterator<T>;
  atomic(): StoreAtomic;
  set(key: Deno.KvKey, value: unknown, options?: StoreSetOptions): Promise<Deno.KvCommitResult>;
  delete(key: Deno.KvKey): Promise<void>;
  close(): void;
}
