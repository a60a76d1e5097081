/**
 * Copies a gateway's whole store into another, empty one — a Deno KV file into a PostgreSQL
 * database when the gateway moves to several hosts, or back — then proves the copy: every entry
 * is byte-equal, and every session exports byte for byte the same samples in every format from
 * both. Stop the gateways first: what they write during the copy is not in it.
 *
 *     deno run -A tools/store_copy.ts --from ./data/gateway.kv --to postgres://gw:PW@db/rg
 *     deno run -A tools/store_copy.ts --from postgres://gw:PW@db/rg --to ./restored.kv
 *
 * Exits 0 when the copy is proven, 1 (saying where) when it is not, 2 on bad arguments.
 *
 * @module
 */
import { parseArgs } from "node:util";
import { resolveConfig } from "../lib/config/mod.ts";
import {
  copyStore,
  firstDifference,
  type OpenedStore,
  openStore,
  type Store,
} from "../lib/kv/mod.ts";
import { listSessions } from "../lib/session/mod.ts";
import { loadTokenizer } from "../lib/tokenizer/mod.ts";
import { exportSamples, type SamplesDeps, SamplesQuery } from "../functions/_samples.ts";
import { EXPORT_FORMATS } from "../lib/segment/mod.ts";

/** The store `place` names: a `postgres://` URL, or a KV file's path. */
function open(place: string): Promise<OpenedStore> {
  const url = /^postgres(ql)?:\/\//.test(place) ? place : null;
  return openStore({
    url,
    kvPath: place,
    postgres: {
      maxConnections: 4,
      statementTimeoutMs: 60_000,
      connectTimeoutMs: 10_000,
      sweepIntervalMs: 0,
    },
  });
}

/**
 * The first session whose export in some format differs between `a` and `b` (read by `deps`
 * on each), or `null`; how many sessions were compared.
 */
export async function firstExportDifference(
  deps: Omit<SamplesDeps, "kv">,
  a: Store,
  b: Store,
): Promise<{ sessions: number; difference: string | null }> {
  const formats = ["raw", ...EXPORT_FORMATS.map((format) => format.name)];
  let sessions = 0;
  let cursor: string | undefined;
  for (;;) {
    const page = await listSessions(a, { limit: 100, cursor });
    for (const session of page.sessions) {
      sessions++;
      for (const format of formats) {
        const query = SamplesQuery.parse({ format });
        const [x, y] = await Promise.all(
          [a, b].map(async (kv) =>
            JSON.stringify(await exportSamples({ ...deps, kv }, session.id, query))
          ),
        );
        if (x !== y) return { sessions, difference: `session ${session.id}, format ${format}` };
      }
    }
    if (page.cursor === null) return { sessions, difference: null };
    cursor = page.cursor;
  }
}

async function main(): Promise<number> {
  const { values } = parseArgs({ options: { from: { type: "string" }, to: { type: "string" } } });
  if (!values.from || !values.to) {
    console.error(
      "Usage: deno run -A tools/store_copy.ts --from <KV file | postgres://…> --to <…>",
    );
    return 2;
  }
  const [from, to] = [await open(values.from), await open(values.to)];
  try {
    console.log(`Copying ${from.description} into ${to.description}`);
    const copied = await copyStore(
      from.store,
      to.store,
      (entries) => Deno.stdout.writeSync(new TextEncoder().encode(`\r  ${entries} entries`)),
    );
    console.log(`\r  ${copied.entries} entries, ${copied.bytes} bytes copied`);
    const entries = await firstDifference(from.store, to.store);
    if (entries !== null) {
      console.error(`The copy differs: ${entries}`);
      return 1;
    }
    console.log("  every entry byte-equal");
    const config = resolveConfig(Deno.env.toObject());
    const deps = {
      config,
      tokenizer: await loadTokenizer(config.tokenizerPath),
      control: {
        weightVersions: () => Promise.reject(new Error("no engine: exports ask it nothing")),
      },
    } as unknown as Omit<SamplesDeps, "kv">;
    const exports = await firstExportDifference(deps, from.store, to.store);
    if (exports.difference !== null) {
      console.error(`The copy's exports differ: ${exports.difference}`);
      return 1;
    }
    console.log(`  ${exports.sessions} sessions export the same samples in every format`);
    return 0;
  } finally {
    await from.close();
    await to.close();
  }
}

if (import.meta.main) Deno.exit(await main());
