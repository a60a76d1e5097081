/**
 * Opening the store a configuration names: PostgreSQL when `STORE_URL` is set (a gateway tier on
 * several machines), else the Deno KV file at `KV_PATH` (one host; `:memory:` for tests).
 *
 * @module
 */
import { sleep } from "../timing/mod.ts";
import { openPostgresStore, type PostgresStoreOptions } from "./postgres_store.ts";
import type { Store } from "./store.ts";

/** Where the store is, and how to reach it. */
export interface StoreLocation {
  /** `STORE_URL`: a `postgres://` URL, or `null` for the KV file. */
  readonly url: string | null;
  /** `KV_PATH`: the KV file (or `:memory:`) when there is no URL. */
  readonly kvPath: string;
  /** The PostgreSQL pool and timeouts. */
  readonly postgres: PostgresStoreOptions;
}

/** An open store, what it is, and how to let it go. */
export interface OpenedStore {
  readonly store: Store;
  /** What the banner and errors say of it: the KV file, or the URL without its password. */
  readonly description: string;
  /** Closes it, waiting for what is in flight. */
  close(): Promise<void>;
}

/** Tries of opening a KV file another process is opening at the same time. */
const OPEN_TRIES = 20;

/**
 * The store at `location`. A KV file another process is creating or migrating at the same
 * moment (`database is locked`, as when several workers start together) is opened again after
 * a short, random wait.
 *
 * @throws what opening throws: `StoreUnavailableError` for a database that cannot be reached.
 */
export async function openStore(location: StoreLocation): Promise<OpenedStore> {
  if (location.url !== null) {
    const store = await openPostgresStore(location.url, location.postgres);
    return { store, description: `PostgreSQL ${redacted(location.url)}`, close: () => store.end() };
  }
  const path = location.kvPath;
  if (path !== ":memory:") {
    const slash = path.lastIndexOf("/");
    if (slash > 0) await Deno.mkdir(path.slice(0, slash), { recursive: true });
  }
  for (let attempt = 1;; attempt++) {
    try {
      const kv = await Deno.openKv(path);
      return {
        store: kv,
        description: path === ":memory:" ? "Deno KV in memory" : `Deno KV file ${path}`,
        close: () => Promise.resolve(kv.close()),
      };
    } catch (error) {
      if (!/database is locked/i.test((error as Error).message) || attempt >= OPEN_TRIES) {
        throw error;
      }
      await sleep(Math.random() * 20 * attempt);
    }
  }
}

/**
 * `url` without its password (`postgres://user:***@host/db`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { redacted } from "./open_store.ts";
 * assert.equal(redacted("postgres://gw:secret@db:5432/rg"), "postgres://gw:***@db:5432/rg");
 * ```
 */
export function redacted(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = "***";
    return parsed.href;
  } catch {
    return "(a URL that does not parse)";
  }
}
