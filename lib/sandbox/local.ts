/**
 * The local sandbox backend: a temporary git work tree of the task's repository on this machine,
 * every command run under bubblewrap (Debian package `bubblewrap`). A timeout kills the whole
 * process tree (bwrap's PID namespace dies with it); `kill()` removes the work tree.
 *
 * @module
 */
import { bwrapArgs, type HostRoot, LOCAL_PATHS } from "./bwrap_args.ts";
import { describe, HOST_GIT_ENV } from "./git_bundle.ts";
import {
  FORWARD_INSIDE,
  FORWARD_SCRIPT,
  forwardedCommand,
  type ForwardListener,
  listenForward,
} from "./forward.ts";
import { hostCommand } from "./host_command.ts";
import { drainInto, OutputTail } from "./output_tail.ts";
import { resolveInside } from "./paths.ts";
import {
  existingFolders,
  killTree,
  readHostRoots,
  removeOrphans,
  writeOwner,
} from "./_local_host.ts";
import {
  checkExtraPaths,
  DEFAULT_OUTPUT_BYTES,
  type ExecOptions,
  type ExecResult,
  type HostBind,
  RepoError,
  type Sandbox,
  type SandboxBackend,
  type SandboxBackendKind,
  type SandboxCapabilities,
  type SandboxSpec,
  SandboxUnavailableError,
} from "./sandbox.ts";

/** How the local backend is set up. */
export interface LocalBackendOptions {
  /** Host folder holding one folder per sandbox. */
  readonly root: string;
  /** Host paths hidden inside every sandbox (the gateway's data). */
  readonly hidden?: readonly string[];
  /** The bubblewrap executable. */
  readonly bwrap?: string;
  /**
   * A test hook, unset in production: called as each boot starts, it may throw (a boot that
   * fails) or wait on the boot's signal (a boot that hangs), as a cloud backend's boots do.
   */
  readonly bootFault?: (signal: AbortSignal) => Promise<void>;
}

/**
 * What bubblewrap sandboxes can do: they run on this host's system (no images), are lent the
 * host's agent CLIs read-only, and reach the gateway through one forwarded port.
 */
export const LOCAL_CAPABILITIES: SandboxCapabilities = Object.freeze({
  placement: "host",
  runsImages: false,
  agentInstall: "lent",
  gatewayReach: "forward",
});

/** The local backend's kind: always there, its sandboxes under `SANDBOX_ROOT/sandboxes`. */
export const LOCAL_BACKEND: SandboxBackendKind = {
  name: "local",
  unavailable: () => null,
  create: (config, { hidden }) =>
    new LocalBackend({ root: `${config.sandboxRoot}/sandboxes`, hidden }),
};

/** Sandboxes from bubblewrap on this machine. */
export class LocalBackend implements SandboxBackend {
  readonly name = "local";
  readonly capabilities = LOCAL_CAPABILITIES;
  readonly location: string;
  readonly #bootFault: LocalBackendOptions["bootFault"];
  readonly #root: string;
  readonly #bwrap: string;
  readonly #hiddenWanted: readonly string[];
  readonly #live = new Set<LocalSandbox>();
  /** Creates in progress: `close()` aborts them and waits until they have cleaned up. */
  readonly #creating = new Set<Promise<Sandbox>>();
  readonly #closing = new AbortController();
  #ready: Promise<Environment> | null = null;

  constructor(options: LocalBackendOptions) {
    this.#root = options.root.replace(/\/+$/, "");
    this.location = this.#root;
    this.#bwrap = options.bwrap ?? "bwrap";
    this.#bootFault = options.bootFault;
    this.#hiddenWanted = [this.#root, ...(options.hidden ?? [])];
  }

  /** Checks bubblewrap once and removes folders left by crashed owners. */
  #environment(): Promise<Environment> {
    this.#ready ??= this.#prepare();
    this.#ready.catch(() => (this.#ready = null));
    return this.#ready;
  }

  async #prepare(): Promise<Environment> {
    await Deno.mkdir(this.#root, { recursive: true });
    const hostRoots = await readHostRoots();
    const hidden = await existingFolders(this.#hiddenWanted);
    await removeOrphans(this.#root);
    const env: Environment = { hostRoots, hidden };
    // One sandboxed `true` proves that bubblewrap is installed and namespaces are allowed.
    const probe = await Deno.makeTempDir({ dir: this.#root, prefix: "probe-" });
    try {
      const dirs = { repo: probe, home: probe, tmp: probe };
      await hostCommand(
        this.#bwrap,
        bwrapArgs({
          ...env,
          dirs,
          command: "true",
          cwd: "/",
          env: {},
          user: "user",
          network: false,
        }),
      );
    } catch (error) {
      const reason = error instanceof Deno.errors.NotFound
        ? `"${this.#bwrap}" is not installed (Debian: apt-get install bubblewrap)`
        : `bubblewrap cannot create a sandbox here: ${(error as Error).message}`;
      throw new SandboxUnavailableError(`Local sandboxes are unavailable: ${reason}`, {
        cause: error,
      });
    } finally {
      await Deno.remove(probe, { recursive: true }).catch(() => {});
    }
    return env;
  }

  create(request: SandboxSpec): Promise<Sandbox> {
    const creating = this.#create(request);
    this.#creating.add(creating);
    creating.catch(() => {}).finally(() => this.#creating.delete(creating));
    return creating;
  }

  async #create(request: SandboxSpec): Promise<Sandbox> {
    // A create still cloning when the backend closes is aborted, not left to finish after it.
    const signal = AbortSignal.any([
      this.#closing.signal,
      ...(request.signal ? [request.signal] : []),
    ]);
    const spec = { ...request, signal };
    spec.signal.throwIfAborted();
    for (const bind of spec.binds ?? []) {
      if (!/^\/sandbox\/tools\/[\w.-]+(?:\/[\w.-]+)*$/.test(bind.inside)) {
        throw new RangeError(`Bind target "${bind.inside}" is not a path under /sandbox/tools/`);
      }
    }
    if (spec.forward && spec.network) {
      throw new RangeError("A sandbox with a forward has no network of its own: set network false");
    }
    checkExtraPaths(spec);
    await this.#bootFault?.(spec.signal);
    const env = await this.#environment();
    const id = `sbx_${crypto.randomUUID().replaceAll("-", "").slice(0, 20)}`;
    const dir = `${this.#root}/${id}`;
    await Deno.mkdir(dir);
    await writeOwner(dir);
    const dirs = { repo: `${dir}/repo`, home: `${dir}/home`, tmp: `${dir}/tmp` };
    await Promise.all([Deno.mkdir(dirs.home), Deno.mkdir(dirs.tmp)]);
    // Each writable folder is a host folder of the sandbox; an alias shows the work tree again.
    const writable: HostBind[] = (spec.writableDirs ?? []).map((inside, index) => ({
      inside,
      host: `${dir}/extra/${index}`,
    }));
    await Promise.all(writable.map((bind) => Deno.mkdir(bind.host, { recursive: true })));
    if (spec.repo.alias) writable.push({ inside: spec.repo.alias, host: dirs.repo });
    const sandbox = new LocalSandbox(id, dir, dirs, writable, env, this.#bwrap, spec, (s) => {
      this.#live.delete(s);
    });
    if (spec.forward) {
      try {
        await sandbox.openForward();
      } catch (error) {
        await sandbox.kill();
        throw error;
      }
    }
    try {
      // git is dead when this settles, aborted or not: only then is the folder removed.
      await checkout(spec, dirs.repo);
      spec.signal.throwIfAborted();
    } catch (error) {
      await sandbox.kill();
      throw error;
    }
    this.#live.add(sandbox);
    sandbox.startLifetime();
    return sandbox;
  }

  async close(): Promise<void> {
    this.#closing.abort(new SandboxUnavailableError("The local sandbox backend is closing"));
    await Promise.allSettled([...this.#creating]);
    await Promise.all([...this.#live].map((sandbox) => sandbox.kill()));
  }
}

interface Environment {
  readonly hostRoots: readonly HostRoot[];
  readonly hidden: readonly string[];
}

/** The work tree at `spec.commit`, detached and clean, from a host path or a URL. */
async function checkout(spec: SandboxSpec, target: string): Promise<void> {
  const { repo, commit } = spec;
  let source: string;
  if (repo.kind === "path") {
    try {
      await hostCommand("git", ["-C", repo.path, "rev-parse", "--git-dir"]);
    } catch (error) {
      throw new RepoError(`Repository "${repo.path}" is not a git repository on this machine`, {
        cause: error,
      });
    }
    source = repo.path;
  } else if (repo.kind === "url") {
    source = repo.url;
  } else {
    throw new RepoError(
      `The local backend has no images: the task's repository must be a local path or a git URL, not an image folder "${repo.dir}"`,
    );
  }
  const git = (args: string[]) =>
    hostCommand("git", args, { signal: spec.signal, env: HOST_GIT_ENV });
  try {
    // Objects are copied, not hard-linked: a sandboxed process must not reach the source's files.
    await git(["clone", "--quiet", "--no-checkout", "--no-hardlinks", "--", source, target]);
  } catch (error) {
    spec.signal?.throwIfAborted(); // the caller gave up: no fault of the repository
    throw new RepoError(`Cannot clone "${source}": ${describe(error)}`, { cause: error });
  }
  try {
    await git(["-C", target, "checkout", "--quiet", "--detach", commit]);
  } catch (error) {
    spec.signal?.throwIfAborted();
    throw new RepoError(
      `Commit "${commit}" cannot be checked out from "${source}": ${describe(error)}`,
      {
        cause: error,
      },
    );
  }
}

class LocalSandbox implements Sandbox {
  readonly backend = "local";
  readonly workdir = LOCAL_PATHS.workdir;
  readonly tmpdir = LOCAL_PATHS.tmpdir;
  /** Running commands, each with what stops it. */
  readonly #children = new Map<Deno.ChildProcess, () => void>();
  #lifetime: ReturnType<typeof setTimeout> | undefined;
  #killed: Promise<void> | null = null;
  /** The gateway's end of the sandbox's forward, with what it binds inside. */
  #forward: { listener: ForwardListener; binds: HostBind[]; link: string | null } | null = null;

  constructor(
    readonly id: string,
    readonly dir: string,
    readonly dirs: { readonly repo: string; readonly home: string; readonly tmp: string },
    /** Extra writable folders and the work tree's alias, bound after the checkout. */
    readonly writable: readonly HostBind[],
    readonly env: Environment,
    readonly bwrap: string,
    readonly spec: SandboxSpec,
    readonly onKilled: (sandbox: LocalSandbox) => void,
  ) {}

  /**
   * Starts the clock of `spec.lifetimeMs` once the work tree is checked out (a kill during the
   * checkout would remove the folder while git writes into it).
   */
  startLifetime(): void {
    if (this.#killed) return;
    this.#lifetime = setTimeout(() => {
      // Nobody awaits this kill: a failure must not become an unhandled rejection (a crash).
      this.kill().catch((error) => console.error(`Cannot kill sandbox ${this.id}: ${error}`));
    }, this.spec.lifetimeMs);
  }

  /**
   * Listens on the Unix socket the sandbox's forwarder reaches the gateway through. Its path is
   * kept short (Unix socket paths hold at most 107 bytes).
   */
  async openForward(): Promise<void> {
    const forward = this.spec.forward!;
    let socket = `${this.dir}/gateway.sock`;
    let link: string | null = null;
    if (socket.length > 100) {
      // A short name for the folder, through a link of our own in the host's temp folder.
      link = await Deno.makeTempDir({ prefix: "rg-fwd-" });
      await Deno.remove(link);
      await Deno.symlink(this.dir, link);
      socket = `${link}/gateway.sock`;
    }
    this.#forward = {
      link,
      listener: listenForward(socket, forward.to),
      binds: [
        { host: Deno.execPath(), inside: FORWARD_INSIDE.deno },
        { host: FORWARD_SCRIPT, inside: FORWARD_INSIDE.script },
        { host: `${this.dir}/gateway.sock`, inside: FORWARD_INSIDE.socket },
      ],
    };
  }

  async exec(command: string, options: ExecOptions): Promise<ExecResult> {
    if (this.#killed) throw new Error(`Sandbox ${this.id} was killed`);
    const started = performance.now();
    const forward = this.spec.forward;
    const args = bwrapArgs({
      ...this.env,
      dirs: this.dirs,
      command: forward ? forwardedCommand(command, forward.port) : command,
      cwd: options.cwd ?? this.workdir,
      env: options.env ?? {},
      user: options.user ?? "user",
      network: this.spec.network,
      ...(options.readOnly ? { readOnly: options.readOnly } : {}),
      binds: [...(this.spec.binds ?? []), ...(this.#forward?.binds ?? [])],
      writable: this.writable,
    });
    const child = new Deno.Command(this.bwrap, {
      args,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
      detached: true, // a session and process group of its own, for `killTree`
    }).spawn();
    let exited = false;
    child.status.then(() => (exited = true));
    const cap = options.outputBytes ?? DEFAULT_OUTPUT_BYTES;
    const stdout = new OutputTail(cap);
    const stderr = new OutputTail(cap);
    let timedOut = false;
    let stopped = false;
    const stop = () => {
      stopped = true;
      if (!exited) killTree(child); // once reaped, its pid may name another process
    };
    this.#children.set(child, stop);
    const timer = setTimeout(() => {
      timedOut = true;
      stop();
    }, options.timeoutMs);
    options.signal?.addEventListener("abort", stop, { once: true });
    if (options.signal?.aborted) stop(); // an abort event already past never fires again
    try {
      const [status] = await Promise.all([
        child.status,
        drainInto(child.stdout, stdout),
        drainInto(child.stderr, stderr),
      ]);
      return {
        exitCode: stopped || status.signal !== null ? null : status.code,
        stdout: stdout.text(),
        stderr: stderr.text(),
        timedOut,
        truncated: stdout.truncated || stderr.truncated,
        durationMs: Math.round(performance.now() - started),
      };
    } finally {
      clearTimeout(timer);
      options.signal?.removeEventListener("abort", stop);
      this.#children.delete(child);
    }
  }

  async writeFile(path: string, content: string | Uint8Array): Promise<void> {
    const host = await resolveInside(path, this.#mounts(), { create: true });
    const data = typeof content === "string" ? new TextEncoder().encode(content) : content;
    await Deno.writeFile(host, data);
  }

  async readFile(path: string): Promise<Uint8Array> {
    return await Deno.readFile(await resolveInside(path, this.#mounts(), { create: false }));
  }

  #mounts() {
    return [
      { inside: LOCAL_PATHS.workdir, host: this.dirs.repo },
      { inside: LOCAL_PATHS.home, host: this.dirs.home },
      { inside: LOCAL_PATHS.tmpdir, host: this.dirs.tmp },
      ...this.writable,
    ];
  }

  kill(): Promise<void> {
    this.#killed ??= (async () => {
      clearTimeout(this.#lifetime);
      for (const stop of this.#children.values()) stop();
      await Promise.all([...this.#children.keys()].map((child) => child.status));
      await this.#forward?.listener.close();
      if (this.#forward?.link) await Deno.remove(this.#forward.link).catch(() => {});
      await Deno.remove(this.dir, { recursive: true }).catch((error) => {
        if (!(error instanceof Deno.errors.NotFound)) throw error;
      });
      this.onKilled(this);
    })();
    return this.#killed;
  }
}
