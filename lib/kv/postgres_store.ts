/**
 * The store on PostgreSQL, for a gateway tier on several machines (`STORE_URL=postgres://…`):
 * the {@linkcode Store} port with Deno KV's meaning. Keys are Deno KV's tuple encoding as bytes
 * (`key_codec.ts`), so lists come back in KV's order; values are V8's serialization (`node:v8`,
 * what structured clone writes: what Deno KV stores too), a `Deno.KvU64` as its 8 bytes. A get is
 * one round trip, a listing one per page, an atomic commit one (`rg_commit`, in
 * `_postgres_schema.ts`): checked and written keys locked, checks, mutations, a versionstamp from
 * the database's sequence. No host's clock decides anything here: expiry is the database's time.
 *
 * The driver is `postgres` (porsager/postgres: pure JavaScript, prepared statements, a bounded
 * pool; 165 µs a `SELECT 1` here against `pg`'s 203).
 *
 * @module
 */
import postgres from "postgres";
import { deserialize, serialize } from "node:v8";
import { Buffer } from "node:buffer";
import type { CodedError } from "../errors/mod.ts";
import { decodeKey, encodeKey } from "./key_codec.ts";
import type { Store, StoreAtomic, StoreListIterator, StoreSetOptions } from "./store.ts";
import { MIGRATION_LOCK, SCHEMA, SCHEMA_VERSION } from "./_postgres_schema.ts";

/** The store could not be reached or did not answer in time: nothing was written; try again. */
export class StoreUnavailableError extends Error implements CodedError {
  readonly code = "store_unavailable" as const;
  constructor(cause: unknown) {
    super(
      `The store (PostgreSQL) is unavailable: ${(cause as Error)?.message ?? String(cause)}`,
      { cause },
    );
    this.name = "StoreUnavailableError";
  }
}

/** How the PostgreSQL store connects. */
export interface PostgresStoreOptions {
  /** Connections at most (a pool per process). */
  readonly maxConnections: number;
  /** A statement running longer is cancelled (`statement_timeout`), and the call fails. */
  readonly statementTimeoutMs: number;
  /** How long connecting may take before the call fails. */
  readonly connectTimeoutMs: number;
  /** How often expired entries are deleted (0: never, in this process). */
  readonly sweepIntervalMs: number;
}

/** Rows a listing fetches at a time when it has no limit. */
const LIST_BATCH = 500;

const TAG_V8 = 0;
const TAG_U64 = 1;

/** SQLSTATE classes and codes that mean "the database is not there right now". */
const UNAVAILABLE_STATES = /^(08|53|57P0[1-4]|57014|40001|40P01)/;
/** The driver's own codes for a connection that failed. */
const UNAVAILABLE_CODES = new Set([
  "CONNECTION_CLOSED",
  "CONNECTION_ENDED",
  "CONNECTION_DESTROYED",
  "CONNECT_TIMEOUT",
  "ECONNREFUSED",
  "ECONNRESET",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENOTFOUND",
]);

/**
 * Whether `error` says the database could not be reached (a connection refused, cut, timed out; the
 * server shutting down or starting), rather than that a statement failed.
 */
export function storeUnreachable(error: unknown): boolean {
  const code = (error as { code?: unknown })?.code;
  return typeof code === "string" && (UNAVAILABLE_CODES.has(code) || UNAVAILABLE_STATES.test(code));
}

/** `call`'s result; a lost database as a {@linkcode StoreUnavailableError}. */
async function reached<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    throw storeUnreachable(error) ? new StoreUnavailableError(error) : error;
  }
}

const b64 = (bytes: Uint8Array) =>
  Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length)
    .toString("base64");

/** A value as stored: its tag, then its bytes. */
export function encodeValue(value: unknown): Uint8Array {
  if (value instanceof Deno.KvU64) {
    const bytes = new Uint8Array(9);
    bytes[0] = TAG_U64;
    new DataView(bytes.buffer).setBigUint64(1, value.value);
    return bytes;
  }
  const body = serialize(value);
  const bytes = new Uint8Array(body.length + 1);
  bytes[0] = TAG_V8;
  bytes.set(body, 1);
  return bytes;
}

/** The value `bytes` hold. */
export function decodeValue(bytes: Uint8Array): unknown {
  if (bytes[0] === TAG_U64) {
    return new Deno.KvU64(new DataView(bytes.buffer, bytes.byteOffset, 9).getBigUint64(1));
  }
  return deserialize(bytes.subarray(1));
}

/** A versionstamp as the database's sequence number (`-1`: none it ever wrote). */
function versionNumber(versionstamp: string): string {
  return /^[0-9a-f]{20}$/.test(versionstamp) ? BigInt(`0x${versionstamp}`).toString() : "-1";
}

/** One row of `rg_kv`. */
interface Row {
  readonly key: Uint8Array;
  readonly value: Uint8Array;
  readonly versionstamp: string;
}

const LIVE = "(expires_at IS NULL OR expires_at > now())";
const SELECT_ONE =
  `SELECT value, lpad(to_hex(versionstamp), 20, '0') AS versionstamp FROM rg_kv WHERE key = $1 AND ${LIVE}`;
const SELECT_MANY = `SELECT key, value, lpad(to_hex(versionstamp), 20, '0') AS versionstamp
  FROM rg_kv WHERE key IN (SELECT decode(x, 'base64') FROM jsonb_array_elements_text($1::text::jsonb) x)
  AND ${LIVE}`;

/**
 * Opens the store at `url`, creating or migrating its schema (safe when several processes start
 * at once).
 *
 * @throws {StoreUnavailableError} when the database cannot be reached.
 */
export async function openPostgresStore(
  url: string,
  options: PostgresStoreOptions,
): Promise<PostgresStore> {
  const sql = postgres(url, {
    max: options.maxConnections,
    connect_timeout: Math.ceil(options.connectTimeoutMs / 1000),
    idle_timeout: 60,
    onnotice: () => {},
    connection: {
      statement_timeout: options.statementTimeoutMs,
      application_name: "rollout-gateway",
    },
  });
  try {
    await reached(() =>
      sql.begin(async (tx) => {
        await tx.unsafe(`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK})`);
        for (const statement of SCHEMA) await tx.unsafe(statement);
        const [{ newest }] = await tx.unsafe(`SELECT max(version) AS newest FROM rg_schema`);
        if (Number(newest) > SCHEMA_VERSION) {
          throw new Error(
            `The store's schema is version ${newest}, newer than this gateway's ${SCHEMA_VERSION}`,
          );
        }
      })
    );
  } catch (error) {
    await sql.end({ timeout: 1 }).catch(() => {});
    throw error;
  }
  return new PostgresStore(sql, options);
}

/** A {@linkcode Store} on a PostgreSQL database. */
export class PostgresStore implements Store {
  readonly #sql: postgres.Sql;
  readonly #sweeper: ReturnType<typeof setInterval> | undefined;
  #closed = false;

  constructor(sql: postgres.Sql, options: PostgresStoreOptions) {
    this.#sql = sql;
    if (options.sweepIntervalMs > 0) {
      const sweeper = setInterval(() => {
        this.sweepExpired().catch(() => {/* the next sweep tries again */});
      }, options.sweepIntervalMs);
      Deno.unrefTimer(sweeper);
      this.#sweeper = sweeper;
    }
  }

  /** Deletes the entries past their expiry; how many. */
  async sweepExpired(): Promise<number> {
    const rows = await reached(() =>
      this.#sql.unsafe(`DELETE FROM rg_kv WHERE expires_at <= now()`)
    );
    return rows.count;
  }

  async get<T = unknown>(key: Deno.KvKey): Promise<Deno.KvEntryMaybe<T>> {
    const rows = await reached(() =>
      this.#sql.unsafe<Row[]>(SELECT_ONE, [encodeKey(key)], { prepare: true })
    );
    if (rows.length === 0) return { key, value: null, versionstamp: null };
    return { key, value: decodeValue(rows[0].value) as T, versionstamp: rows[0].versionstamp };
  }

  async getMany<T extends readonly unknown[]>(
    keys: readonly [...{ [K in keyof T]: Deno.KvKey }],
  ): Promise<{ [K in keyof T]: Deno.KvEntryMaybe<T[K]> }> {
    const encoded = keys.map((key) => encodeKey(key));
    const rows = keys.length === 0
      ? []
      : await reached(() =>
        this.#sql.unsafe<Row[]>(SELECT_MANY, [JSON.stringify(encoded.map(b64))], { prepare: true })
      );
    const byKey = new Map(rows.map((row) => [b64(row.key), row]));
    return keys.map((key, i) => {
      const row = byKey.get(b64(encoded[i]));
      return row
        ? { key, value: decodeValue(row.value), versionstamp: row.versionstamp }
        : { key, value: null, versionstamp: null };
    }) as { [K in keyof T]: Deno.KvEntryMaybe<T[K]> };
  }

  list<T = unknown>(
    selector: Deno.KvListSelector,
    options: Pick<Deno.KvListOptions, "limit" | "cursor" | "reverse" | "batchSize"> = {},
  ): StoreListIterator<T> {
    return new PostgresList<T>(
      (after, count) => this.#page(selector, options, after, count),
      options,
    );
  }

  /** Up to `count` rows of `selector` past `after` (a key's bytes), in the listing's order. */
  async #page(
    selector: Deno.KvListSelector,
    options: Pick<Deno.KvListOptions, "reverse">,
    after: Uint8Array | null,
    count: number,
  ): Promise<Row[]> {
    const { low, lowInclusive, high } = range(selector);
    const conditions = [LIVE];
    const params: Uint8Array[] = [];
    const param = (bytes: Uint8Array) => `$${params.push(bytes)}`;
    if (low) conditions.push(`key ${lowInclusive ? ">=" : ">"} ${param(low)}`);
    if (high) conditions.push(`key < ${param(high)}`);
    if (after) conditions.push(`key ${options.reverse ? "<" : ">"} ${param(after)}`);
    const text = `SELECT key, value, lpad(to_hex(versionstamp), 20, '0') AS versionstamp
      FROM rg_kv WHERE ${conditions.join(" AND ")}
      ORDER BY key ${options.reverse ? "DESC" : "ASC"} LIMIT ${count}`;
    return await reached(() => this.#sql.unsafe<Row[]>(text, params, { prepare: true }));
  }

  atomic(): StoreAtomic {
    return new PostgresAtomic((doc) =>
      reached(() =>
        this.#sql.unsafe(`SELECT rg_commit($1::text::jsonb) AS versionstamp`, [doc], {
          prepare: true,
        })
      )
    );
  }

  async set(key: Deno.KvKey, value: unknown, options?: StoreSetOptions) {
    const result = await this.atomic().set(key, value, options).commit();
    return result as Deno.KvCommitResult;
  }

  async delete(key: Deno.KvKey): Promise<void> {
    await this.atomic().delete(key).commit();
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    clearInterval(this.#sweeper);
    this.#sql.end({ timeout: 5 }).catch(() => {});
  }

  /** Closes the pool, waiting for queries in flight (up to 5 s). */
  async end(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#sweeper);
    await this.#sql.end({ timeout: 5 });
  }
}

/**
 * The byte range of a selector: keys under a prefix are the prefix's bytes followed by at least
 * one more part (each part's tag is below 0xff), `start` is included, `end` is not.
 */
function range(
  selector: Deno.KvListSelector,
): { low: Uint8Array | null; lowInclusive: boolean; high: Uint8Array | null } {
  const has = (name: string) => Object.hasOwn(selector, name);
  const prefix = has("prefix") ? encodeKey((selector as { prefix: Deno.KvKey }).prefix) : null;
  const start = has("start") ? encodeKey((selector as { start: Deno.KvKey }).start) : null;
  const end = has("end") ? encodeKey((selector as { end: Deno.KvKey }).end) : null;
  const afterPrefix = prefix ? Uint8Array.from([...prefix, 0xff]) : null;
  return {
    low: start ?? prefix,
    lowInclusive: start !== null,
    high: end ?? afterPrefix,
  };
}

/** The entries of a listing, fetched a page at a time. */
class PostgresList<T> implements StoreListIterator<T> {
  #buffer: Row[] = [];
  #last: Uint8Array | null;
  #remaining: number;
  #done = false;

  constructor(
    readonly fetch: (after: Uint8Array | null, count: number) => Promise<Row[]>,
    readonly options: Pick<Deno.KvListOptions, "limit" | "cursor" | "batchSize">,
  ) {
    this.#remaining = options.limit ?? Infinity;
    this.#last = options.cursor ? cursorKey(options.cursor) : null;
  }

  /** The cursor after the last entry given (empty before any). */
  get cursor(): string {
    return this.#last ? b64(this.#last).replaceAll("+", "-").replaceAll("/", "_") : "";
  }

  async next(): Promise<IteratorResult<Deno.KvEntry<T>>> {
    if (this.#remaining <= 0) return { done: true, value: undefined };
    if (this.#buffer.length === 0 && !this.#done) {
      const count = Math.min(this.#remaining, this.options.batchSize ?? LIST_BATCH);
      this.#buffer = await this.fetch(this.#last, count);
      if (this.#buffer.length < count) this.#done = true;
    }
    const row = this.#buffer.shift();
    if (!row) return { done: true, value: undefined };
    this.#remaining--;
    this.#last = new Uint8Array(row.key);
    return {
      done: false,
      value: {
        key: decodeKey(row.key),
        value: decodeValue(row.value) as T,
        versionstamp: row.versionstamp,
      },
    };
  }

  [Symbol.asyncIterator](): this {
    return this;
  }
}

/**
 * The key bytes a cursor this store handed out holds.
 *
 * @throws {TypeError} for one it did not.
 */
function cursorKey(cursor: string): Uint8Array {
  if (!/^[A-Za-z0-9_-]+={0,2}$/.test(cursor)) throw new TypeError("invalid cursor");
  const bytes = new Uint8Array(Buffer.from(cursor, "base64url"));
  try {
    decodeKey(bytes);
  } catch {
    throw new TypeError("invalid cursor");
  }
  return bytes;
}

/** One commit as the database function takes it. */
class PostgresAtomic implements StoreAtomic {
  readonly #checks: [string, string | null][] = [];
  readonly #mutations: [number, string, string | null, number | null][] = [];

  constructor(readonly run: (doc: string) => Promise<{ versionstamp: string | null }[]>) {}

  check(...checks: Deno.AtomicCheck[]): this {
    for (const { key, versionstamp } of checks) {
      this.#checks.push([
        b64(encodeKey(key)),
        versionstamp === null ? null : versionNumber(versionstamp),
      ]);
    }
    return this;
  }

  set(key: Deno.KvKey, value: unknown, options?: StoreSetOptions): this {
    this.#mutations.push([
      0,
      b64(encodeKey(key)),
      b64(encodeValue(value)),
      options?.expireIn ?? null,
    ]);
    return this;
  }

  delete(key: Deno.KvKey): this {
    this.#mutations.push([1, b64(encodeKey(key)), null, null]);
    return this;
  }

  sum(key: Deno.KvKey, n: bigint): this {
    this.#mutations.push([2, b64(encodeKey(key)), b64(encodeValue(new Deno.KvU64(n))), null]);
    return this;
  }

  async commit(): Promise<Deno.KvCommitResult | Deno.KvCommitError> {
    const [{ versionstamp }] = await this.run(
      JSON.stringify({ c: this.#checks, m: this.#mutations }),
    );
    return versionstamp === null ? { ok: false } : { ok: true, versionstamp };
  }
}
