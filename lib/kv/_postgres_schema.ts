/**
 * The PostgreSQL store's schema, created and migrated idempotently: every gateway process runs
 * {@linkcode SCHEMA} at start, under one advisory lock, so processes starting together do not
 * race on `CREATE` (PostgreSQL's `IF NOT EXISTS` is not safe against a concurrent create).
 *
 * One table holds every entry: its key as bytes (`key_codec.ts`, so `ORDER BY key` is Deno KV's
 * order), its value (a tag byte, then V8's serialization or a `Deno.KvU64`'s 8 bytes), the
 * versionstamp of the commit that wrote it, and when it expires. `rg_commit` applies one atomic
 * commit in one round trip: every key it checks or writes is locked first (advisory locks, in one
 * order), so two commits that touch a key in common — written by one, checked by the other — run
 * one after the other; then the checks (an expired entry is absent), then the mutations under one
 * new versionstamp from a sequence.
 *
 * @module
 */

/** The schema version this code writes; a newer one in the database refuses to start. */
export const SCHEMA_VERSION = 1;

/** The advisory lock the migration holds (any constant the gateway owns). */
export const MIGRATION_LOCK = 7_204_771_533;

/** The migration, statement by statement; each is safe to run again. */
export const SCHEMA: readonly string[] = [
  `CREATE TABLE IF NOT EXISTS rg_schema (
     version integer PRIMARY KEY,
     applied_at timestamptz NOT NULL DEFAULT now()
   )`,
  `CREATE TABLE IF NOT EXISTS rg_kv (
     key bytea PRIMARY KEY,
     value bytea NOT NULL,
     versionstamp bigint NOT NULL,
     expires_at timestamptz
   )`,
  `CREATE INDEX IF NOT EXISTS rg_kv_expiry ON rg_kv (expires_at) WHERE expires_at IS NOT NULL`,
  `CREATE SEQUENCE IF NOT EXISTS rg_kv_version`,
  // A KvU64's value: tag 1, then 8 bytes big-endian.
  `CREATE OR REPLACE FUNCTION rg_u64(value bytea) RETURNS numeric
   LANGUAGE plpgsql IMMUTABLE AS $$
   DECLARE n numeric := 0;
   BEGIN
     IF value IS NULL THEN RETURN 0; END IF;
     IF length(value) <> 9 OR get_byte(value, 0) <> 1 THEN
       RAISE EXCEPTION 'Failed to perform ''sum'' mutation on a non-U64 value in the database'
         USING ERRCODE = '22023';
     END IF;
     FOR i IN 1 .. 8 LOOP n := n * 256 + get_byte(value, i); END LOOP;
     RETURN n;
   END $$`,
  `CREATE OR REPLACE FUNCTION rg_u64_bytes(n numeric) RETURNS bytea
   LANGUAGE plpgsql IMMUTABLE AS $$
   DECLARE out bytea := '\\x010000000000000000';
   BEGIN
     n := mod(n, 18446744073709551616);
     FOR i IN REVERSE 8 .. 1 LOOP
       out := set_byte(out, i, mod(n, 256)::integer);
       n := div(n, 256);
     END LOOP;
     RETURN out;
   END $$`,
  // doc: {"c": [[key, versionstamp | null], …], "m": [[kind, key, value | null, expireMs | null], …]},
  // keys and values base64; kind 0 set, 1 delete, 2 sum. The new versionstamp, or null when a
  // check failed.
  `CREATE OR REPLACE FUNCTION rg_commit(doc jsonb) RETURNS text
   LANGUAGE plpgsql AS $$
   DECLARE
     lock_id bigint;
     item jsonb;
     k bytea;
     found_version bigint;
     version bigint;
     current bytea;
   BEGIN
     FOR lock_id IN
       SELECT DISTINCT hashtextextended(x, 0) FROM (
         SELECT c ->> 0 AS x FROM jsonb_array_elements(doc -> 'c') c
         UNION ALL SELECT m ->> 1 FROM jsonb_array_elements(doc -> 'm') m
       ) keys ORDER BY 1
     LOOP
       PERFORM pg_advisory_xact_lock(lock_id);
     END LOOP;
     FOR item IN SELECT * FROM jsonb_array_elements(doc -> 'c') LOOP
       SELECT versionstamp INTO found_version FROM rg_kv
        WHERE key = decode(item ->> 0, 'base64')
          AND (expires_at IS NULL OR expires_at > clock_timestamp());
       IF NOT FOUND THEN found_version := NULL; END IF;
       IF found_version IS DISTINCT FROM (item ->> 1)::bigint THEN RETURN NULL; END IF;
     END LOOP;
     version := nextval('rg_kv_version');
     FOR item IN SELECT * FROM jsonb_array_elements(doc -> 'm') LOOP
       k := decode(item ->> 1, 'base64');
       IF (item ->> 0)::integer = 1 THEN
         DELETE FROM rg_kv WHERE key = k;
         CONTINUE;
       END IF;
       IF (item ->> 0)::integer = 2 THEN
         SELECT value INTO current FROM rg_kv
          WHERE key = k AND (expires_at IS NULL OR expires_at > clock_timestamp());
         IF NOT FOUND THEN current := NULL; END IF;
         current := rg_u64_bytes(rg_u64(current) + rg_u64(decode(item ->> 2, 'base64')));
       ELSE
         current := decode(item ->> 2, 'base64');
       END IF;
       INSERT INTO rg_kv (key, value, versionstamp, expires_at)
       VALUES (k, current, version,
               clock_timestamp() + (item ->> 3)::double precision * interval '1 millisecond')
       ON CONFLICT (key) DO UPDATE
         SET value = excluded.value, versionstamp = excluded.versionstamp,
             expires_at = excluded.expires_at;
     END LOOP;
     RETURN lpad(to_hex(version), 20, '0');
   END $$`,
  `INSERT INTO rg_schema (version) VALUES (${SCHEMA_VERSION}) ON CONFLICT (version) DO NOTHING`,
];
