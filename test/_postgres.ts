/**
 * A throwaway PostgreSQL cluster for the tests that run on the shared store: Debian's PostgreSQL
 * (`.ci/run` and `tools/setup.ts --tests` install it), `initdb` into a temporary folder as an
 * unprivileged user (PostgreSQL will not run as root), a free port on loopback, no fsync (a killed
 * server loses nothing: commits are written to the OS, which outlives it); never a
 * system service, never the network. Each test gets a database of its own
 * ({@linkcode PostgresCluster.database}).
 *
 * @module
 */
import postgres from "postgres";

/** A running cluster. */
export interface PostgresCluster {
  /** The server's port on 127.0.0.1. */
  readonly port: number;
  /** The URL of a fresh, empty database of this cluster. */
  database(): Promise<string>;
  /** Stops the server at once, as a crash would (`pg_ctl stop -m immediate`). */
  kill(): Promise<void>;
  /** Starts it again on the same port and data. */
  start(): Promise<void>;
  /** Stops it and removes its folder. */
  close(): Promise<void>;
}

/** The folder of Debian's PostgreSQL programs (`initdb`, `pg_ctl`), the newest installed. */
async function binaries(): Promise<string> {
  const root = "/usr/lib/postgresql";
  const versions: number[] = [];
  try {
    for await (const entry of Deno.readDir(root)) {
      if (/^\d+$/.test(entry.name)) versions.push(Number(entry.name));
    }
  } catch { /* none */ }
  if (versions.length === 0) {
    throw new Error(
      "PostgreSQL is not installed: the shared-store tests need Debian's `postgresql` " +
        "(tools/setup.ts --tests installs it: apt-get install -y postgresql)",
    );
  }
  return `${root}/${Math.max(...versions)}/bin`;
}

/** Runs `program` as the cluster's owner (`postgres` when this process is root). */
async function run(program: string, args: string[], asOwner: boolean): Promise<string> {
  const [command, fullArgs] = asOwner ? ["runuser", ["-u", "postgres", "--", program, ...args]] : [
    program,
    args,
  ];
  const output = await new Deno.Command(command, {
    args: fullArgs,
    stdout: "piped",
    stderr: "piped",
  })
    .output();
  const text = new TextDecoder().decode(output.stdout) + new TextDecoder().decode(output.stderr);
  if (!output.success) throw new Error(`${program} ${args.join(" ")} failed: ${text}`);
  return text;
}

/** A port nothing listens on now. */
function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  return port;
}

let databases = 0;

/** Starts a cluster; close it when done. */
export async function startPostgres(): Promise<PostgresCluster> {
  const bin = await binaries();
  const root = Deno.uid() === 0;
  const dir = await Deno.makeTempDir({ prefix: "rg-pg-" });
  if (root) await Deno.chown(dir, ...await ownerIds());
  const data = `${dir}/data`;
  await run(`${bin}/initdb`, ["-D", data, "-A", "trust", "-U", "gateway", "--no-sync"], root);
  const port = freePort();
  const start = () =>
    run(`${bin}/pg_ctl`, [
      "-D",
      data,
      "-l",
      `${dir}/log`,
      "-w",
      "-o",
      `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off`,
      "start",
    ], root).then(() => {});
  const stop = (mode: string) =>
    run(`${bin}/pg_ctl`, ["-D", data, "-m", mode, "-w", "stop"], root).then(() => {});
  await start();
  const admin = `postgres://gateway@127.0.0.1:${port}/postgres`;
  return {
    port,
    async database() {
      const name = `t${Deno.pid}_${databases++}`;
      const sql = postgres(admin, { max: 1, onnotice: () => {} });
      try {
        await sql.unsafe(`CREATE DATABASE ${name}`);
      } finally {
        await sql.end();
      }
      return `postgres://gateway@127.0.0.1:${port}/${name}`;
    },
    kill: () => stop("immediate"),
    start,
    async close() {
      await stop("immediate").catch(() => {});
      await Deno.remove(dir, { recursive: true });
    },
  };
}

/** The uid and gid of the `postgres` user. */
async function ownerIds(): Promise<[number, number]> {
  const passwd = await Deno.readTextFile("/etc/passwd");
  const line = passwd.split("\n").find((entry) => entry.startsWith("postgres:"));
  if (!line) throw new Error("No `postgres` user: install Debian's postgresql package");
  const [, , uid, gid] = line.split(":");
  return [Number(uid), Number(gid)];
}
