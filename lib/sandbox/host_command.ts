/**
 * Runs a short command on the gateway's own machine (git, bwrap --version), outside any
 * sandbox, failing loudly with its stderr.
 *
 * @module
 */

/** A host command that exited with a non-zero status. */
export class HostCommandError extends Error {
  constructor(
    readonly command: string,
    readonly code: number,
    readonly stderr: string,
  ) {
    super(
      `${command} failed with exit code ${code}: ${stderr.trim().slice(-2000) || "(no output)"}`,
    );
    this.name = "HostCommandError";
  }
}

/** How a host command runs. */
export interface HostCommandOptions {
  readonly cwd?: string;
  readonly env?: Readonly<Record<string, string>>;
  readonly stdin?: Uint8Array;
  readonly signal?: AbortSignal;
}

/**
 * Runs `command args…` and returns its stdout.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { hostCommand } from "./host_command.ts";
 * assert.equal(await hostCommand("echo", ["hello"]), "hello\n");
 * await assert.rejects(hostCommand("false", [])); // a failed command throws
 * ```
 * @throws {HostCommandError} on a non-zero exit; `Deno.errors.NotFound` when not installed;
 * the signal's reason when `signal` aborted it.
 */
export async function hostCommand(
  command: string,
  args: readonly string[],
  options: HostCommandOptions = {},
): Promise<string> {
  const child = new Deno.Command(command, {
    args: [...args],
    cwd: options.cwd,
    env: options.env ? { ...options.env } : undefined,
    stdin: options.stdin ? "piped" : "null",
    stdout: "piped",
    stderr: "piped",
    // A process group of its own, so that an abort also ends the helpers it started (git's
    // `remote-http`, which would hold the output pipes open until the remote answers).
    detached: true,
  }).spawn();
  const abort = () => {
    try {
      Deno.kill(-child.pid, "SIGKILL");
    } catch { /* already exited */ }
  };
  options.signal?.addEventListener("abort", abort, { once: true });
  if (options.signal?.aborted) abort();
  try {
    // Written while the output is read, so neither pipe fills up and blocks the other.
    const writing = options.stdin ? writeAll(child.stdin, options.stdin) : Promise.resolve();
    const { code, stdout, stderr } = await child.output();
    await writing.catch(() => {}); // a command that exits without reading its input
    options.signal?.throwIfAborted();
    const decoder = new TextDecoder();
    if (code !== 0) {
      throw new HostCommandError(
        `${command} ${args[0] ?? ""}`.trim(),
        code,
        decoder.decode(stderr),
      );
    }
    return decoder.decode(stdout);
  } finally {
    options.signal?.removeEventListener("abort", abort);
  }
}

async function writeAll(stream: WritableStream<Uint8Array>, data: Uint8Array): Promise<void> {
  const writer = stream.getWriter();
  await writer.write(data);
  await writer.close();
}
