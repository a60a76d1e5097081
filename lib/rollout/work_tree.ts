/**
 * The agent's work tree: prepared before the agent (the task's pre-commands run and committed,
 * the problem statement written), its work collected after (a diff against that commit), and
 * Claude Code installed where the sandbox has none.
 *
 * @module
 */
import type { Task } from "../evaluate/mod.ts";
import { shellQuote } from "../shell/mod.ts";
import { interleaved, type Sandbox } from "../sandbox/mod.ts";
import { type NpmInstall, PROBLEM_FILE } from "../agents/mod.ts";

/** Bounds of one setup command. */
export interface CommandLimits {
  readonly timeoutMs: number;
  readonly outputBytes: number;
}

/** Longest collecting the patch may take. */
const COLLECT_TIMEOUT_MS = 120_000;
/** Identity of the commit that records what the task's pre-commands changed. */
const SETUP_COMMIT_ENV = {
  GIT_AUTHOR_NAME: "rollout",
  GIT_AUTHOR_EMAIL: "rollout@localhost",
  GIT_COMMITTER_NAME: "rollout",
  GIT_COMMITTER_EMAIL: "rollout@localhost",
};

/**
 * Runs the task's pre-commands (the agent works in the tree the grader will see) and commits
 * what they changed, so the patch holds only the agent's work; writes the problem statement.
 * Resolves to the commit the patch is taken against.
 */
export async function prepareWorkTree(
  sandbox: Sandbox,
  task: Task,
  limits: CommandLimits,
  signal: AbortSignal,
): Promise<string> {
  const run = async (command: string, what: string) => {
    const result = await sandbox.exec(interleaved(command), {
      timeoutMs: limits.timeoutMs,
      env: { ...task.env, ...SETUP_COMMIT_ENV },
      outputBytes: limits.outputBytes,
      signal,
    });
    signal.throwIfAborted();
    if (result.exitCode !== 0) {
      throw new SetupError(
        `${what} failed (${result.timedOut ? "timed out" : `exit ${result.exitCode}`}): ${
          result.stdout.slice(-1000)
        }`,
      );
    }
    return result.stdout;
  };
  for (const [index, command] of task.pre_commands.entries()) {
    await run(command, `pre_commands[${index}]`);
  }
  if (task.pre_commands.length > 0) {
    await run(
      "git add -A && git commit --quiet --allow-empty --no-verify -m 'rollout: pre_commands'",
      "Recording the pre-commands",
    );
  }
  await sandbox.writeFile(`${sandbox.workdir}/${PROBLEM_FILE}`, task.problem_statement);
  return (await run("git rev-parse HEAD", "Reading the base commit")).trim();
}

/** The agent's work as a diff against `base`: its commits, staged and unstaged changes and new
 * files, binary ones included, the problem statement left out. */
export async function collectPatch(
  sandbox: Sandbox,
  base: string,
  limits: Pick<CommandLimits, "outputBytes">,
  signal: AbortSignal,
): Promise<string> {
  const out = `${sandbox.tmpdir}/rollout_patch.diff`;
  const exclude = shellQuote(`:(exclude)${PROBLEM_FILE}`);
  const result = await sandbox.exec(
    `git add -A && git diff --cached --binary ${shellQuote(base)} -- . ${exclude} > ${
      shellQuote(out)
    }`,
    { timeoutMs: COLLECT_TIMEOUT_MS, outputBytes: limits.outputBytes, signal },
  );
  signal.throwIfAborted();
  if (result.exitCode !== 0) {
    throw new SetupError(
      `Collecting the patch failed: ${(result.stdout + result.stderr).slice(-1000)}`,
    );
  }
  return new TextDecoder().decode(await sandbox.readFile(out));
}

/**
 * The path of the agent's CLI (`install.bin`) in an E2B sandbox: the template's, or one installed
 * with npm into the user's `~/.local` (no root needed) when the template has none — offline from
 * the uploaded tarball when there is one (or unpacked from it, for a static binary), else from
 * the registry (npm's cache preferred). The install counts against the agent's time.
 */
export async function installAgent(
  sandbox: Sandbox,
  install: NpmInstall,
  env: Readonly<Record<string, string>>,
  limits: CommandLimits,
  signal: AbortSignal,
): Promise<string> {
  // The agent's environment: an npm cache or registry it names is used here too.
  const options = { timeoutMs: limits.timeoutMs, env, outputBytes: limits.outputBytes, signal };
  const found = await sandbox.exec(`command -v ${shellQuote(install.bin)}`, options);
  signal.throwIfAborted();
  if (found.exitCode === 0 && found.stdout.trim().startsWith("/")) return found.stdout.trim();
  let source = shellQuote(install.package);
  let offline = "--prefer-offline";
  let uploaded: string | null = null;
  if (install.tarball !== null) {
    uploaded = `${sandbox.tmpdir}/${install.bin}-agent.tgz`;
    source = shellQuote(uploaded);
    offline = "--offline";
    await sandbox.writeFile(uploaded, await Deno.readFile(install.tarball));
    signal.throwIfAborted();
  }
  // A tarball holding a static binary is unpacked, not installed.
  const into = `"$HOME/.local/share/rollout-${install.bin}"`;
  const command = uploaded !== null && install.unpack
    ? `mkdir -p ${into} && tar -xzf ${
      shellQuote(uploaded)
    } -C ${into} >&2 && echo ${into}/package/${shellQuote(install.unpack)}`
    : `npm install -g --no-audit --no-fund --no-update-notifier ${offline} --prefix "$HOME/.local" ${source} >&2 && echo "$HOME/.local/bin/"${
      shellQuote(install.bin)
    }`;
  const result = await sandbox.exec(command, options);
  signal.throwIfAborted();
  const path = result.stdout.trim().split("\n").at(-1) ?? "";
  if (result.exitCode !== 0 || !path.startsWith("/")) {
    throw new SetupError(
      `Installing ${install.package} failed: ${(result.stdout + result.stderr).slice(-1000)}`,
    );
  }
  return path;
}

/** Setting the agent's sandbox up failed (pre-commands, git, the CLI install). */
export class SetupError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "SetupError";
  }
}
