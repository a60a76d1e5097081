/**
 * The sandbox contract every backend keeps: a fresh, isolated machine (or work tree) holding a
 * task's repository at its base commit, in which commands run with a timeout and files are read
 * and written; killed, it leaves nothing behind.
 *
 * @module
 */

import type { Config } from "../config/mod.ts";
import type { CodedError } from "../errors/mod.ts";
import type { Forward } from "./forward.ts";

/** Where the repository of a sandbox comes from. */
export type RepoSource =
  & (
    /** A git repository on the gateway's machine, copied into the sandbox. */
    | { readonly kind: "path"; readonly path: string }
    /** A git URL, cloned by the sandbox. */
    | { readonly kind: "url"; readonly url: string }
    /**
     * A folder already inside the sandbox's image (an E2B template), at `dir`: a checkout, or
     * plain files that are made a git repository of one commit when the sandbox boots.
     */
    | { readonly kind: "image"; readonly dir: string }
  )
  & {
    /**
     * Another absolute path where the work tree also appears inside (Harbor's `/app`): the
     * local backend binds it there too, E2B links it. One {@linkcode extraPathProblem} allows.
     */
    readonly alias?: string;
  };

/** What a sandbox is made from. */
export interface SandboxSpec {
  readonly repo: RepoSource;
  /** The commit the work tree is checked out at (detached, clean). */
  readonly commit: string;
  /** E2B template (image) name; the local backend ignores it. */
  readonly template?: string;
  /** Labels kept with the sandbox (E2B metadata), for finding and cleaning it up. */
  readonly metadata?: Readonly<Record<string, string>>;
  /** Whether commands may reach the network. Evaluation sandboxes have none. */
  readonly network: boolean;
  /**
   * With `network: false`, the one address commands still reach, at `127.0.0.1:<port>` inside:
   * how a local agent reaches the gateway and nothing else on the host (see `forward.ts`). Only
   * the local backend has it.
   */
  readonly forward?: Forward;
  /**
   * Host files or folders shown read-only inside at `inside` (a path under `/sandbox/tools/`):
   * tools the local backend lends from the host. The E2B backend has none; it installs instead.
   */
  readonly binds?: readonly HostBind[];
  /**
   * Empty folders made at these absolute paths inside, writable by the sandbox's user (Harbor's
   * `/tests` and `/logs`): locally host folders of the sandbox bound there, on E2B plain folders
   * made by root. Each one {@linkcode extraPathProblem} allows.
   */
  readonly writableDirs?: readonly string[];
  /** Longest the sandbox may live, in milliseconds; a backend kills it after this. */
  readonly lifetimeMs: number;
  /** Aborted when the caller gives up: a boot in progress stops and nothing is left. */
  readonly signal?: AbortSignal;
}

/** A host file or folder shown read-only inside a local sandbox. */
export interface HostBind {
  readonly host: string;
  readonly inside: string;
}

/** How one command runs. */
export interface ExecOptions {
  /** Killed, with every process it started, after this many milliseconds. */
  readonly timeoutMs: number;
  /** Working directory inside the sandbox; the work tree when unset. */
  readonly cwd?: string;
  /** Extra environment variables. */
  readonly env?: Readonly<Record<string, string>>;
  /**
   * `"user"` (unprivileged, the default) or `"root"`: a container's root, whose writes no file
   * mode blocks (its capabilities are Docker's default set: no mounts).
   */
  readonly user?: SandboxUser;
  /**
   * Folders of the sandbox made read-only for this command and everything it starts, root
   * included (local: a read-only remount that no capability left can undo; E2B: the same in a
   * mount namespace of the command's own, its capabilities to undo it dropped, root commands
   * only).
   */
  readonly readOnly?: readonly string[];
  /** Bytes of stdout and of stderr kept, each; the last bytes are kept. */
  readonly outputBytes?: number;
  /** Aborted when the caller gives up: the command is killed as on a timeout. */
  readonly signal?: AbortSignal;
}

/** Who a command runs as. */
export type SandboxUser = "user" | "root";

/** What one command did. */
export interface ExecResult {
  /** Exit status; `null` when it was killed (timeout, abort). */
  readonly exitCode: number | null;
  /** The last bytes of stdout, up to the cap. */
  readonly stdout: string;
  /** The last bytes of stderr, up to the cap. */
  readonly stderr: string;
  /** It ran past its timeout and was killed. */
  readonly timedOut: boolean;
  /** Output beyond the cap was dropped (from the start). */
  readonly truncated: boolean;
  readonly durationMs: number;
}

/** One live sandbox. `kill()` is idempotent and leaves no process or file behind. */
export interface Sandbox {
  readonly id: string;
  /** The backend that made it: `local` or `e2b`. */
  readonly backend: string;
  /** Absolute path of the repository's work tree inside the sandbox. */
  readonly workdir: string;
  /** Absolute path of a scratch folder inside the sandbox, private to it. */
  readonly tmpdir: string;
  exec(command: string, options: ExecOptions): Promise<ExecResult>;
  writeFile(path: string, content: string | Uint8Array): Promise<void>;
  readFile(path: string): Promise<Uint8Array>;
  kill(): Promise<void>;
}

/** Makes sandboxes. */
/**
 * What a backend's sandboxes can do, which callers ask instead of its name: where they run, what
 * they boot, how an agent CLI gets inside and how it reaches the gateway.
 */
export interface SandboxCapabilities {
  /**
   * `host`: on this machine, the host's files below them (its tools can be lent read-only);
   * `remote`: each a machine of its own, reached over the network.
   */
  readonly placement: "host" | "remote";
  /**
   * It boots the image a task names (an E2B template, a Harbor task's Docker image), so a task's
   * files may come from the image; without it every sandbox is the host's system.
   */
  readonly runsImages: boolean;
  /**
   * How an agent's CLI gets inside: `lent`, the host's install bound read-only (`binds`);
   * `install`, installed with npm (or unpacked) inside, the host's tarball uploaded when there is.
   */
  readonly agentInstall: "lent" | "install";
  /**
   * How an agent reaches the gateway: `forward`, one port forwarded to loopback inside with no
   * network otherwise (`forward`); `network`, the network, at the gateway's public URL.
   */
  readonly gatewayReach: "forward" | "network";
}

export interface SandboxBackend {
  /** Its name in configuration and requests (`local`, `e2b`). */
  readonly name: string;
  /** What its sandboxes can do. */
  readonly capabilities: SandboxCapabilities;
  /** Where its sandboxes live, for people (the start-up banner); absent when nowhere to show. */
  readonly location?: string;
  create(spec: SandboxSpec): Promise<Sandbox>;
  /** Kills every sandbox this backend still has alive (at shutdown). */
  close(): Promise<void>;
}

/** What every backend is made with besides the configuration. */
export interface BackendContext {
  /** Host paths no sandbox may see (the gateway's KV folder). */
  readonly hidden: readonly string[];
}

/** One kind of sandbox backend: its name and how the gateway makes it. */
export interface SandboxBackendKind {
  /** Its name in `SANDBOX_BACKEND` and a rollout's `sandbox.backend`. */
  readonly name: string;
  /** Why `config` cannot make it (told to a request that names it), or `null` when it can. */
  unavailable(config: Config): string | null;
  /** The backend, made from `config`. */
  create(config: Config, context: BackendContext): SandboxBackend;
}

/** The backend cannot make sandboxes now (not installed, unreachable, out of capacity). */
export class SandboxUnavailableError extends Error implements CodedError {
  readonly code = "sandbox_unavailable" as const;
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "SandboxUnavailableError";
  }
}

/**
 * The task's repository cannot be provided: the path is not a git repository, the commit does
 * not exist, the clone failed. A fault of the task, not of the backend.
 */
export class RepoError extends Error implements CodedError {
  readonly code = "bad_repo" as const;
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "RepoError";
  }
}

/**
 * Top-level names an extra path (a writable folder, a work-tree alias) may not start with: the
 * sandbox's own folders, kernel file systems and the system's programs and libraries, which
 * such a folder would hide.
 */
export const RESERVED_ROOTS: ReadonlySet<string> = new Set([
  "bin",
  "boot",
  "dev",
  "etc",
  "lib",
  "lib32",
  "lib64",
  "libx32",
  "proc",
  "root",
  "run",
  "sandbox",
  "sbin",
  "sys",
  "tmp",
  "usr",
  "var",
]);

/**
 * What is wrong with `path` as an extra path inside a sandbox, or `null`: it must be absolute,
 * of one to four plain names (letters, digits, `.`, `_`, `-`; no `.` or `..`), and not start
 * with one of {@linkcode RESERVED_ROOTS}.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { extraPathProblem } from "./sandbox.ts";
 * assert.equal(extraPathProblem("/tests"), null);
 * assert.match(extraPathProblem("/usr/tests")!, /^"\/usr" is the system's/);
 * ```
 */
export function extraPathProblem(path: string): string | null {
  if (!/^(?:\/[A-Za-z0-9._-]{1,64}){1,4}$/.test(path)) {
    return `"${path}" is not an absolute path of one to four plain names`;
  }
  const names = path.slice(1).split("/");
  if (names.some((name) => name === "." || name === "..")) {
    return `"${path}" has a "." or ".." part`;
  }
  if (RESERVED_ROOTS.has(names[0])) {
    return `"/${names[0]}" is the system's or the sandbox's own: pick a path outside ${
      [...RESERVED_ROOTS].map((name) => `/${name}`).join(", ")
    }`;
  }
  return null;
}

/**
 * Checks a spec's extra paths (its writable folders and its work tree's alias) before a backend
 * makes anything: each one {@linkcode extraPathProblem} allows, none twice.
 *
 * @throws {RangeError} naming the path at fault.
 */
export function checkExtraPaths(spec: SandboxSpec): void {
  const extra = [...(spec.writableDirs ?? []), ...(spec.repo.alias ? [spec.repo.alias] : [])];
  for (const path of extra) {
    const problem = extraPathProblem(path);
    if (problem) throw new RangeError(`Extra sandbox path ${problem}`);
  }
  if (new Set(extra).size < extra.length) {
    throw new RangeError(`Extra sandbox paths repeat one another: ${extra.join(", ")}`);
  }
}

/** Default cap on the output kept per stream of one command. */
export const DEFAULT_OUTPUT_BYTES = 1024 * 1024;

/**
 * `command` with its stderr sent to stdout, so one log reads in the order things happened.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { fixtureRepo } from "../evaluate/mod.ts";
 * import { LocalBackend } from "./local.ts";
 * import { interleaved } from "./sandbox.ts";
 * const root = await Deno.makeTempDir();
 * const backend = new LocalBackend({ root });
 * const repo = { kind: "path" as const, path: await fixtureRepo("python_unittest", root) };
 * const sandbox = await backend.create({
 *   repo,
 *   commit: "1bdf00de",
 *   network: false,
 *   lifetimeMs: 60_000,
 * });
 * const result = await sandbox.exec(interleaved("echo out; echo err >&2"), {
 *   timeoutMs: 10_000,
 * });
 * assert.equal(result.stdout, "out\nerr\n"); // both streams, in order, in stdout
 * await backend.close();
 * await Deno.remove(root, { recursive: true });
 * ```
 */
export function interleaved(command: string): string {
  return `{ ${command}\n} 2>&1`;
}
