/**
 * Grading a Harbor task in its sandbox: the task's own tests folder written to `/tests` after
 * the patch (never anything of the patched tree's), `/logs/verifier` made empty, and once
 * `bash /tests/test.sh` has run in the work tree, the reward file it wrote read back, bounded.
 *
 * @module
 */
import { Buffer } from "node:buffer";
import type { ExecOptions, ExecResult, Sandbox } from "../sandbox/mod.ts";
import {
  HARBOR_REWARD_FILES,
  HARBOR_TESTS_DIR,
  HARBOR_VERIFIER_DIR,
  MAX_REWARD_FILE_BYTES,
  parseHarborReward,
  type VerifierReward,
} from "./harbor_reward.ts";
import { shellQuote } from "../shell/mod.ts";
import type { HarborTestFile } from "./task.ts";

/** The folders a Harbor task's sandbox is made with, empty and writable. */
export const HARBOR_SANDBOX_DIRS: readonly string[] = [HARBOR_TESTS_DIR, "/logs"];

/** The command that runs a Harbor task's verifier, in the work tree. */
export const HARBOR_TEST_COMMAND = `bash ${HARBOR_TESTS_DIR}/test.sh`;

/**
 * Who the verifier runs as: Harbor's container root, whose writes of the reward no file mode,
 * replaced file or read-only folder the code under test leaves can block, with `/tests`
 * read-only, so what the code under test runs cannot rewrite `test.sh` while it runs.
 */
export const HARBOR_VERIFIER_RIGHTS: Pick<ExecOptions, "user" | "readOnly"> = {
  user: "root",
  readOnly: [HARBOR_TESTS_DIR],
};

/**
 * `null` when the verifier ended by itself; otherwise why its reward is not read. A verifier
 * killed by a signal (exit 128 + n, or no status) did not write its own reward: what the reward
 * files hold then is whatever the code under test left there.
 */
export function verifierFinished(result: ExecResult): { readonly error: string } | null {
  if (result.exitCode !== null && result.exitCode <= 128) return null;
  return {
    error: `test.sh was stopped by a signal (${
      result.exitCode === null ? "no exit status" : `exit ${result.exitCode}`
    }) before it finished: its reward files are not read`,
  };
}

/** Longest reading the reward back may take. */
const READ_TIMEOUT_MS = 30_000;

/**
 * Writes the tests folder to `/tests` and makes `/logs/verifier` empty (no reward file left
 * from before); `run` runs a command in the sandbox within the evaluation's limit.
 *
 * @throws {Error} when the folders cannot be made (a broken sandbox, not the patch's fault).
 */
export async function prepareHarborTests(
  sandbox: Sandbox,
  files: readonly HarborTestFile[],
  run: (command: string) => Promise<ExecResult>,
): Promise<ExecResult | null> {
  for (const file of files) {
    await sandbox.writeFile(
      `${HARBOR_TESTS_DIR}/${file.path}`,
      new Uint8Array(Buffer.from(file.base64, "base64")),
    );
  }
  const executables = files.filter((file) => file.executable)
    .map((file) => shellQuote(`${HARBOR_TESTS_DIR}/${file.path}`));
  const verifier = shellQuote(HARBOR_VERIFIER_DIR);
  const result = await run(
    (executables.length > 0 ? `chmod +x ${executables.join(" ")} && ` : "") +
      `rm -rf ${verifier} && mkdir -p ${verifier}`,
  );
  if (result.timedOut) return result;
  if (result.exitCode !== 0) {
    throw new Error(`Cannot prepare ${HARBOR_TESTS_DIR} and /logs: ${result.stdout.slice(-500)}`);
  }
  return null;
}

/**
 * The reward `test.sh` left, from `reward.json` and `reward.txt`, each read no further than
 * {@linkcode MAX_REWARD_FILE_BYTES} (one byte more tells a larger file). Harbor reads
 * `reward.json` first; when both are files, the lower reward counts (`reward.json` on a tie), so
 * a program under test that plants the file its verifier does not write cannot raise the score.
 * A file that is there and does not parse is what the reward is, an error: never skipped; so is a
 * name that is no plain file.
 */
export async function readHarborReward(
  sandbox: Sandbox,
  signal: AbortSignal | undefined,
): Promise<VerifierReward | { readonly error: string }> {
  const names = HARBOR_REWARD_FILES.join(" ");
  // As root, like the verifier: a file the code under test left unreadable is still read. A
  // name that is there but is no plain file (a symbolic link, a folder, a pipe) was put there
  // by something else than a verifier writing its reward: exit 4 names it.
  const result = await sandbox.exec(
    `cd ${shellQuote(HARBOR_VERIFIER_DIR)} || exit 3\n` +
      `for f in ${names}; do if [ -L "$f" ] || { [ -e "$f" ] && [ ! -f "$f" ]; }; then ` +
      `echo "$f"; exit 4; fi; done\n` +
      `for f in ${names}; do if [ -f "$f" ]; then printf '%s ' "$f"; ` +
      `head -c ${MAX_REWARD_FILE_BYTES + 1} -- "$f" | base64 | tr -d '\\n'; echo; fi; done`,
    {
      timeoutMs: READ_TIMEOUT_MS,
      outputBytes: MAX_REWARD_FILE_BYTES * 3,
      signal,
      user: "root",
    },
  );
  signal?.throwIfAborted();
  if (result.exitCode === 3) {
    return { error: `test.sh removed ${HARBOR_VERIFIER_DIR}: no reward file` };
  }
  if (result.exitCode === 4) {
    return {
      error:
        `${HARBOR_VERIFIER_DIR}/${result.stdout.trim()} is not a plain file (a link, a folder or a pipe): not a reward a verifier wrote`,
    };
  }
  if (result.exitCode !== 0) {
    return {
      error: `The reward file cannot be read: ${
        result.timedOut ? "timed out" : `exit ${result.exitCode}`
      } ${result.stderr.slice(-200)}`.trim(),
    };
  }
  const rewards = result.stdout.split("\n").filter((line) => line.includes(" ")).map((line) => {
    const [file, base64] = line.split(" ") as [typeof HARBOR_REWARD_FILES[number], string];
    return parseHarborReward(file, Buffer.from(base64, "base64").toString("utf8"));
  });
  if (rewards.length === 0) {
    return {
      error: `test.sh wrote no reward: neither ${HARBOR_VERIFIER_DIR}/reward.json nor ` +
        `${HARBOR_VERIFIER_DIR}/reward.txt is a file`,
    };
  }
  const broken = rewards.find((reward) => "error" in reward);
  if (broken) return broken;
  return (rewards as VerifierReward[]).reduce((low, reward) =>
    reward.reward < low.reward ? reward : low
  );
}
