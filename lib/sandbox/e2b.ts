/**
 * The E2B sandbox backend, through the `e2b` SDK: a sandbox booted from the task's template
 * (retried with backoff), the repository brought in as a git bundle packed on the gateway (or
 * found in the template), commands run as background processes killed at their timeout, and
 * the sandbox killed afterwards.
 *
 * @module
 */
import { AuthenticationError, CommandExitError, Sandbox as E2bSandbox } from "e2b";
import { bundleCommit, describe } from "./git_bundle.ts";
import { OutputTail } from "./output_tail.ts";
import { backoffMs, sleep } from "../timing/mod.ts";
import {
  checkExtraPaths,
  DEFAULT_OUTPUT_BYTES,
  type ExecOptions,
  type ExecResult,
  RepoError,
  type Sandbox,
  type SandboxBackend,
  type SandboxBackendKind,
  type SandboxCapabilities,
  type SandboxSpec,
  SandboxUnavailableError,
} from "./sandbox.ts";

/** How the E2B backend reaches E2B. */
export interface E2bBackendOptions {
  readonly apiKey: string;
  /** Control-plane URL (E2B's `E2B_API_URL`); unset: from the domain. */
  readonly apiUrl?: string;
  /** envd URL (`E2B_SANDBOX_URL`); unset: from the domain. */
  readonly sandboxUrl?: string;
  readonly domain?: string;
  /** Template of tasks that name none. */
  readonly template: string;
  /** Boots tried before giving up. */
  readonly bootAttempts: number;
  /** First wait between boots, doubled each time, in milliseconds. */
  readonly bootBackoffMs: number;
  /** Host folder for the bundles being uploaded. */
  readonly scratchDir: string;
}

/** Longest one setup command (clone, checkout) may take inside the sandbox. */
const SETUP_TIMEOUT_MS = 10 * 60_000;

/** What a command that could not make its folders read-only prints, before it exits 125. */
const READ_ONLY_FAILED = "rollout-gateway: cannot make read-only:";

/**
 * `command` run with `dirs` read-only to it and everything it starts, root included: in a mount
 * namespace of its own (util-linux's `unshare`) each folder is bound over itself and remounted
 * read-only, then the command runs without the capabilities that could undo that or reach the
 * folders another way (`setpriv`: no `CAP_SYS_ADMIN` to remount, unmount or enter another mount
 * namespace; no `CAP_SYS_PTRACE` to write through another process's `/proc/<pid>/root`; no
 * `CAP_SYS_MODULE`). The namespace ends with the command: the folders are writable again after.
 * An image without the tools, or a folder that cannot be bound, exits 125 naming what failed.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { readOnlyCommand } from "./e2b.ts";
 * const command = readOnlyCommand("bash /tests/test.sh", ["/tests"]);
 * assert.match(command, /\nexec unshare --mount --propagation private -- bash -c '/);
 * assert.match(command, / bash 'bash \/tests\/test\.sh' '\/tests'$/);
 * ```
 */
export function readOnlyCommand(command: string, dirs: readonly string[]): string {
  const q = (value: string) => `'${value.replaceAll("'", `'\\''`)}'`;
  const script = [
    "cmd=$1; shift",
    `command -v setpriv >/dev/null || { echo "${READ_ONLY_FAILED} setpriv (util-linux) is not installed" >&2; exit 125; }`,
    'for d in "$@"; do',
    `  mount --bind -- "$d" "$d" && mount -o remount,bind,ro -- "$d" || { echo "${READ_ONLY_FAILED} $d" >&2; exit 125; }`,
    "done",
    "caps=-sys_admin,-sys_ptrace,-sys_module",
    'exec setpriv --bounding-set "$caps" --inh-caps "$caps" -- bash -c "$cmd"',
  ].join("\n");
  return `command -v unshare >/dev/null || { echo "${READ_ONLY_FAILED} unshare (util-linux) is not installed" >&2; exit 125; }\n` +
    `exec unshare --mount --propagation private -- bash -c ${q(script)} bash ${q(command)} ${
      dirs.map(q).join(" ")
    }`;
}

/** The E2B backend's kind: there when `E2B_API_KEY` is set. */
export const E2B_BACKEND: SandboxBackendKind = {
  name: "e2b",
  unavailable: (config) => config.e2b.apiKey === null ? "e2b needs E2B_API_KEY" : null,
  create: ({ e2b, sandboxRoot }) =>
    new E2bBackend({
      apiKey: e2b.apiKey!,
      apiUrl: e2b.apiUrl ?? undefined,
      sandboxUrl: e2b.sandboxUrl ?? undefined,
      domain: e2b.domain ?? undefined,
      template: e2b.template,
      bootAttempts: e2b.bootAttempts,
      bootBackoffMs: e2b.bootBackoffMs,
      scratchDir: `${sandboxRoot}/bundles`,
    }),
};

/** Sandboxes from E2B. */
export class E2bBackend implements SandboxBackend {
  readonly name = "e2b";
  readonly capabilities: SandboxCapabilities = {
    placement: "remote",
    runsImages: true,
    agentInstall: "install",
    gatewayReach: "network",
  };
  readonly #live = new Set<RemoteSandbox>();

  constructor(readonly options: E2bBackendOptions) {}

  async create(spec: SandboxSpec): Promise<Sandbox> {
    checkExtraPaths(spec);
    // Packed before booting: a bad repository or commit costs no sandbox.
    await Deno.mkdir(this.options.scratchDir, { recursive: true });
    const bundle = spec.repo.kind === "image" ? null : await bundleCommit(
      spec.repo.kind === "path" ? spec.repo.path : spec.repo.url,
      spec.commit,
      this.options.scratchDir,
    );
    let sandbox: RemoteSandbox | null = null;
    try {
      const remote = await this.#boot(spec);
      const home = (await remote.commands.run('printf %s "$HOME"', { requestTimeoutMs: 60_000 }))
        .stdout.trim() || "/home/user";
      const workdir = spec.repo.kind === "image" ? spec.repo.dir : `${home}/repo`;
      sandbox = new RemoteSandbox(remote, home, workdir, `${home}/.rollout`, (s) => {
        this.#live.delete(s);
      });
      this.#live.add(sandbox);
      await sandbox.setup(spec, bundle);
      return sandbox;
    } catch (error) {
      await sandbox?.kill();
      throw error;
    } finally {
      if (bundle) await Deno.remove(bundle.path).catch(() => {});
    }
  }

  /** `Sandbox.create`, retried with exponential backoff; a refused API key is not retried. */
  async #boot(spec: SandboxSpec): Promise<E2bSandbox> {
    const { apiKey, apiUrl, sandboxUrl, domain, bootAttempts, bootBackoffMs } = this.options;
    let lastError: unknown;
    for (let attempt = 1; attempt <= bootAttempts; attempt++) {
      spec.signal?.throwIfAborted();
      try {
        return await E2bSandbox.create(spec.template ?? this.options.template, {
          apiKey,
          apiUrl,
          sandboxUrl,
          domain,
          timeoutMs: spec.lifetimeMs,
          metadata: { ...spec.metadata },
          allowInternetAccess: spec.network,
          signal: spec.signal,
        });
      } catch (error) {
        if (spec.signal?.aborted) throw spec.signal.reason;
        if (error instanceof AuthenticationError) {
          throw new SandboxUnavailableError(`E2B refused the API key: ${error.message}`, {
            cause: error,
          });
        }
        lastError = error;
        if (attempt < bootAttempts) {
          await sleep(backoffMs(attempt, bootBackoffMs), spec.signal);
        }
      }
    }
    throw new SandboxUnavailableError(
      `E2B could not boot a sandbox after ${bootAttempts} attempts: ${
        (lastError as Error)?.message ?? lastError
      }`,
      { cause: lastError },
    );
  }

  async close(): Promise<void> {
    await Promise.all([...this.#live].map((sandbox) => sandbox.kill()));
  }
}

class RemoteSandbox implements Sandbox {
  readonly backend = "e2b";
  #killed: Promise<void> | null = null;

  constructor(
    readonly remote: E2bSandbox,
    /** The sandbox user's home, where setup commands run before the work tree exists. */
    readonly home: string,
    readonly workdir: string,
    readonly tmpdir: string,
    readonly onKilled: (sandbox: RemoteSandbox) => void,
  ) {}

  get id(): string {
    return this.remote.sandboxId;
  }

  /**
   * The work tree at the base commit: cloned from the uploaded bundle, or reset in the image (an
   * image folder that is no git repository made one first, of one commit, and given to the
   * user); then the extra writable folders and the work tree's alias, made by root.
   */
  async setup(spec: SandboxSpec, bundle: { path: string; commit: string } | null): Promise<void> {
    const q = (value: string) => `'${value.replaceAll("'", `'\\''`)}'`;
    if (!bundle) {
      const dir = q(this.workdir);
      await this.#asRoot(
        `[ -e ${dir}/.git ] || { mkdir -p ${dir} && cd ${dir} && git init --quiet && ` +
          "git add -A && git -c user.name=rollout -c user.email=rollout@localhost commit " +
          `--quiet --allow-empty --no-verify -m base && chown -R user:user ${dir}; }`,
        "Cannot make the image's work tree a git repository",
        spec.signal,
      );
    }
    let command: string;
    if (bundle) {
      const remoteBundle = `${this.tmpdir}/base.bundle`;
      await this.writeFile(remoteBundle, await Deno.readFile(bundle.path));
      command = `git clone --quiet --no-checkout ${q(remoteBundle)} ${q(this.workdir)} && ` +
        `git -C ${q(this.workdir)} checkout --quiet --detach ${bundle.commit} && rm -f ${
          q(remoteBundle)
        }`;
    } else {
      command =
        `git -C ${q(this.workdir)} checkout --quiet --force --detach ${q(spec.commit)} && ` +
        `git -C ${q(this.workdir)} clean --quiet -fdx`;
    }
    const result = await this.exec(`mkdir -p ${q(this.tmpdir)} && ${command}`, {
      timeoutMs: SETUP_TIMEOUT_MS,
      cwd: this.home,
      signal: spec.signal,
    });
    if (result.exitCode !== 0) {
      throw new RepoError(
        `Cannot check out "${spec.commit}" in the E2B sandbox: ${
          result.timedOut ? "timed out" : result.stderr.trim().split("\n").slice(-3).join(" ")
        }`,
      );
    }
    const extras = (spec.writableDirs ?? []).map((dir) =>
      `rm -rf -- ${q(dir)} && mkdir -p -- ${q(dir)} && chmod 0777 -- ${q(dir)}`
    );
    const alias = spec.repo.alias;
    if (alias && alias !== this.workdir) {
      extras.push(
        `rm -rf -- ${q(alias)} && mkdir -p -- "$(dirname -- ${q(alias)})" && ` +
          `ln -s -- ${q(this.workdir)} ${q(alias)}`,
      );
    }
    if (extras.length > 0) {
      await this.#asRoot(extras.join(" && "), "Cannot make the extra folders", spec.signal);
    }
  }

  /** Runs a setup `command` as root; a failure is the task's image's fault. */
  async #asRoot(command: string, what: string, signal?: AbortSignal): Promise<void> {
    const result = await this.exec(command, {
      timeoutMs: SETUP_TIMEOUT_MS,
      cwd: "/",
      user: "root",
      signal,
    });
    if (result.exitCode !== 0) {
      throw new RepoError(
        `${what} in the E2B sandbox: ${
          result.timedOut ? "timed out" : result.stderr.trim().split("\n").slice(-3).join(" ")
        }`,
      );
    }
  }

  async exec(command: string, options: ExecOptions): Promise<ExecResult> {
    if (this.#killed) throw new Error(`Sandbox ${this.id} was killed`);
    const readOnly = options.readOnly ?? [];
    if (readOnly.length === 0) return await this.#run(command, options);
    // Only root may make a mount namespace of its own (E2B's user has no capabilities).
    if (options.user !== "root") {
      throw new Error("E2B sandboxes make folders read-only only for commands run as root");
    }
    const result = await this.#run(readOnlyCommand(command, readOnly), options);
    const said = `${result.stderr}\n${result.stdout}`.split("\n")
      .find((line) => line.startsWith(READ_ONLY_FAILED));
    if (result.exitCode === 125 && said) {
      // The template's fault (as a setup command failing is), not the command's: it never ran.
      throw new RepoError(`E2B sandbox ${this.id}: ${said.slice(0, 300)}`);
    }
    return result;
  }

  /** Runs `command` as given, `options.readOnly` aside. */
  async #run(command: string, options: ExecOptions): Promise<ExecResult> {
    const started = performance.now();
    const cap = options.outputBytes ?? DEFAULT_OUTPUT_BYTES;
    const stdout = new OutputTail(cap);
    const stderr = new OutputTail(cap);
    const encoder = new TextEncoder();
    // The SDK's own errors (a sandbox gone, envd unreachable) mean the backend failed, not the task.
    const lost = (error: unknown) =>
      new SandboxUnavailableError(
        `E2B sandbox ${this.id} failed: ${(error as Error)?.message ?? error}`,
        { cause: error },
      );
    const handle = await this.remote.commands.run(command, {
      background: true,
      cwd: options.cwd ?? this.workdir,
      envs: { ...options.env },
      user: options.user ?? "user",
      timeoutMs: 0, // the timer below kills it; the SDK's own timeout only drops the stream
      onStdout: (data) => stdout.push(encoder.encode(data)),
      onStderr: (data) => stderr.push(encoder.encode(data)),
    }).catch((error) => {
      throw lost(error);
    });
    let timedOut = false;
    let stopped = false;
    const stop = () => {
      stopped = true;
      handle.kill().catch(() => {});
    };
    const timer = setTimeout(() => {
      timedOut = true;
      stop();
    }, options.timeoutMs);
    options.signal?.addEventListener("abort", stop, { once: true });
    if (options.signal?.aborted) stop(); // an abort event already past never fires again
    let exitCode: number | null;
    try {
      exitCode = (await handle.wait()).exitCode;
    } catch (error) {
      if (error instanceof CommandExitError) exitCode = error.exitCode;
      else if (stopped) exitCode = null;
      else throw lost(error);
    } finally {
      clearTimeout(timer);
      options.signal?.removeEventListener("abort", stop);
    }
    // A command killed from outside, when nobody here stopped it: if the sandbox is gone, it
    // vanished under the command (a lost node), which is the backend's failure, not the task's.
    if (!stopped && (exitCode === null || exitCode < 0 || exitCode > 128)) {
      const alive = await this.remote.isRunning({ requestTimeoutMs: 10_000 }).catch(() => false);
      if (!alive) throw lost(new Error("the sandbox vanished while the command ran"));
    }
    return {
      exitCode: stopped ? null : exitCode,
      stdout: stdout.text(),
      stderr: stderr.text(),
      timedOut,
      truncated: stdout.truncated || stderr.truncated,
      durationMs: Math.round(performance.now() - started),
    };
  }

  async writeFile(path: string, content: string | Uint8Array): Promise<void> {
    const data = typeof content === "string" ? content : content.buffer.slice(
      content.byteOffset,
      content.byteOffset + content.byteLength,
    ) as ArrayBuffer;
    await this.remote.files.write(path, data).catch(async (error) => {
      throw await this.#lost(error);
    });
  }

  async readFile(path: string): Promise<Uint8Array> {
    return await this.remote.files.read(path, { format: "bytes" }).catch(async (error) => {
      throw await this.#lost(error);
    });
  }

  /**
   * A file call's error as the backend's failure when the sandbox is gone (it vanished under
   * the job); as it came otherwise (a path that is not there is the caller's).
   */
  async #lost(error: unknown): Promise<unknown> {
    const alive = await this.remote.isRunning({ requestTimeoutMs: 10_000 }).catch(() => false);
    if (alive) return error;
    return new SandboxUnavailableError(
      `E2B sandbox ${this.id} vanished: ${(error as Error)?.message ?? error}`,
      { cause: error },
    );
  }

  kill(): Promise<void> {
    this.#killed ??= (async () => {
      try {
        await this.remote.kill();
      } catch (error) {
        // A sandbox that is already gone is killed; anything else must not go unnoticed.
        console.error(`Cannot kill E2B sandbox ${this.id}: ${describe(error)}`);
      }
      this.onKilled(this);
    })();
    return this.#killed;
  }
}
