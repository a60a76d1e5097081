/**
 * A throwaway git repository on this machine, built with real git, for tests.
 *
 * @module
 */

/** Git with no user or system configuration and a fixed author. */
const GIT_ENV = {
  GIT_CONFIG_NOSYSTEM: "1",
  GIT_CONFIG_GLOBAL: "/dev/null",
  GIT_AUTHOR_NAME: "Sandbox Test",
  GIT_AUTHOR_EMAIL: "sandbox@test.invalid",
  GIT_COMMITTER_NAME: "Sandbox Test",
  GIT_COMMITTER_EMAIL: "sandbox@test.invalid",
};

/** Runs git in `dir` and returns its stdout; throws with its stderr on failure. */
export async function git(dir: string, ...args: string[]): Promise<string> {
  return await gitWithInput(dir, args, null);
}

async function gitWithInput(dir: string, args: string[], stdin: string | null): Promise<string> {
  const child = new Deno.Command("git", {
    args: ["-C", dir, ...args],
    env: GIT_ENV,
    stdin: stdin === null ? "null" : "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  if (stdin !== null) {
    const writer = child.stdin.getWriter();
    await writer.write(new TextEncoder().encode(stdin));
    await writer.close();
  }
  const { code, stdout, stderr } = await child.output();
  const decoder = new TextDecoder();
  if (code !== 0) throw new Error(`git ${args[0]} failed: ${decoder.decode(stderr)}`);
  return decoder.decode(stdout);
}

/** A repository and its commits, oldest first. */
export interface TestRepo {
  readonly path: string;
  /** Full ids of the three commits, oldest first; the last is HEAD. */
  readonly commits: readonly string[];
}

/** The test repository's history: the files each commit writes, oldest first. */
const HISTORY: readonly Readonly<Record<string, string>>[] = [
  { "a.txt": "one\n" },
  { "a.txt": "two\n", "b.txt": "bee\n" },
  { "a.txt": "three\n" },
];

/**
 * A repository in a new temp folder with three commits on `main`, checked out at the last:
 * 1. `a.txt` is `one`;
 * 2. `a.txt` is `two` and `b.txt` is `bee`;
 * 3. `a.txt` is `three`.
 * Written by one `git fast-import` (a process per commit would cost a test tens of milliseconds).
 * The caller removes `path`.
 */
export async function makeRepo(): Promise<TestRepo> {
  const path = await Deno.makeTempDir({ prefix: "sbx-test-repo-" });
  try {
    await git(path, "init", "--quiet", "--initial-branch=main");
    const encoder = new TextEncoder();
    const data = (text: string) => `data ${encoder.encode(text).length}\n${text}`;
    const stream = HISTORY.map((files, index) =>
      [
        "commit refs/heads/main",
        `mark :${index + 1}`,
        `committer Sandbox Test <sandbox@test.invalid> ${1_700_000_000 + index} +0000`,
        data(`commit ${index + 1}`),
        ...Object.entries(files).map(([name, text]) => `M 100644 inline ${name}\n${data(text)}`),
      ].join("\n")
    ).join("\n") + "\n";
    const marks = `${path}/.git/test-marks`;
    await gitWithInput(path, ["fast-import", "--quiet", `--export-marks=${marks}`], stream);
    await git(path, "reset", "--quiet", "--hard");
    // Lines of `:<mark> <commit>`.
    const commits = (await Deno.readTextFile(marks)).trim().split("\n")
      .map((line) => line.split(" ")).sort(([a], [b]) => Number(a.slice(1)) - Number(b.slice(1)))
      .map(([, commit]) => commit);
    return { path, commits };
  } catch (error) {
    await Deno.remove(path, { recursive: true });
    throw error;
  }
}
