/**
 * Installs what the gateway and its tests need beyond Deno's own npm packages, doing nothing
 * for what is already there, so the `serve` and `test` tasks run it every time:
 *
 * - Debian packages, with apt-get (as root, or through sudo): `git` and `bubblewrap` (local
 *   sandboxes) for serving; with `--tests` also `python3-pytest` (a fixture task's runner) and
 *   `chromium` (the viewer's browser test).
 * - The pinned Claude Code CLI in tools/claude-code (npm ci) and Qwen Code CLI in
 *   tools/qwen-code (from its lock file): the agents of `/rollout` (harnesses `claude_code` and
 *   `qwen_code`), and of the tests that drive the real CLIs. With `--tests`, also the pinned
 *   Codex CLI in tools/codex (npm ci), the Responses-speaking agent; and the three packed as npm
 *   tarballs (`tools/claude-code/claude-code-<version>.tgz`, its native binary inside;
 *   `tools/qwen-code/qwen-code-<version>.tgz`; `tools/codex/codex-<version>.tgz`, Codex's
 *   platform package with its static binary), which the E2B rollout tests upload and install
 *   offline: no test needs the registry.
 *
 * What cannot be installed (no root, no apt, no registry) is reported, not fatal, when serving:
 * the gateway serves without it, and what needs it answers with the reason. The tests need all.
 *
 * @module
 */

const tests = Deno.args.includes("--tests");

/** A Debian package and how to tell it is installed. */
interface SystemPackage {
  readonly name: string;
  readonly present: () => Promise<boolean>;
}

const runs = async (command: string, args: string[] = []): Promise<boolean> => {
  try {
    return (await new Deno.Command(command, { args, stdout: "null", stderr: "null" }).output())
      .success;
  } catch {
    return false;
  }
};

const PACKAGES: SystemPackage[] = [
  { name: "git", present: () => runs("git", ["--version"]) },
  { name: "bubblewrap", present: () => runs("bwrap", ["--version"]) },
  // Sandboxes see Debian's /usr/bin/python3, whatever python3 the host's PATH finds first.
  ...(tests
    ? [
      { name: "python3-pytest", present: () => runs("/usr/bin/python3", ["-c", "import pytest"]) },
      // The viewer's browser test drives Debian's headless Chromium.
      { name: "chromium", present: () => runs("/usr/bin/chromium", ["--version"]) },
    ]
    : []),
];

async function installSystemPackages(): Promise<void> {
  const missing: string[] = [];
  for (const pkg of PACKAGES) if (!(await pkg.present())) missing.push(pkg.name);
  if (missing.length === 0) return;
  const root = Deno.uid() === 0;
  const sudo = !root && await runs("sudo", ["-n", "true"]);
  if (!root && !sudo) {
    console.warn(
      `Missing Debian packages: ${missing.join(" ")} (run: sudo apt-get install -y ${
        missing.join(" ")
      })`,
    );
    return;
  }
  console.log(`Installing Debian packages: ${missing.join(" ")} (apt-get)`);
  const apt = (args: string[]) =>
    new Deno.Command(sudo ? "sudo" : "apt-get", {
      args: sudo ? ["-n", "apt-get", ...args] : args,
      env: { DEBIAN_FRONTEND: "noninteractive" },
      stdout: "inherit",
      stderr: "inherit",
    }).output();
  const ok = (await apt(["update", "-qq"])).success &&
    (await apt(["install", "-y", "-qq", "--no-install-recommends", ...missing])).success;
  if (!ok) console.warn(`Could not install ${missing.join(" ")} with apt-get`);
}

/**
 * Installs a pinned agent CLI in `tools/<folder>` from its lock file, unless the pinned version
 * is there: `npm ci`, or `npm install --no-save` for a package whose other platforms' optional
 * binaries are not on the registry (npm cannot lock them, and `npm ci` then refuses the lock).
 */
async function installPinned(
  folder: string,
  pkg: string,
  options: { required: boolean; ci: boolean },
): Promise<void> {
  const dir = new URL(`./${folder}/`, import.meta.url).pathname;
  const pinned: string = JSON.parse(await Deno.readTextFile(`${dir}package.json`))
    .dependencies[pkg];
  const installedVersion = async (): Promise<string | null> => {
    try {
      const manifest = `${dir}node_modules/${pkg}/package.json`;
      return JSON.parse(await Deno.readTextFile(manifest)).version;
    } catch {
      return null;
    }
  };
  if ((await installedVersion()) === pinned) return;
  const command = options.ci ? ["ci"] : ["install", "--no-save"];
  console.log(`Installing ${pkg} ${pinned} into tools/${folder} (npm ${command.join(" ")})`);
  const npm = await new Deno.Command("npm", {
    args: [...command, "--no-audit", "--no-fund", "--loglevel=error"],
    cwd: dir,
    stdout: "inherit",
    stderr: "inherit",
  }).output();
  if (!npm.success || (await installedVersion()) !== pinned) {
    console.error(`Cannot install ${pkg}: npm ${command[0]} failed in tools/${folder}`);
    if (options.required) Deno.exit(1);
  }
}

/**
 * Qwen Code's package (0.24.4) ships its ripgrep without the executable bit, so its search tool
 * cannot spawn it and falls back to a slower built-in grep. Set here, where the package is
 * writable (a sandbox only reads it).
 */
async function makeRipgrepExecutable(): Promise<void> {
  const vendor = new URL(
    "./qwen-code/node_modules/@qwen-code/qwen-code/vendor/ripgrep/",
    import.meta.url,
  ).pathname;
  try {
    for await (const platform of Deno.readDir(vendor)) {
      const rg = `${vendor}${platform.name}/rg`;
      const mode = (await Deno.stat(rg).catch(() => null))?.mode;
      if (mode != null && (mode & 0o111) === 0) await Deno.chmod(rg, mode | 0o755);
    }
  } catch { /* not installed */ }
}

/**
 * Packs an installed CLI (Claude Code's already holding its native binary) as an npm tarball,
 * once: `tools/<folder>/<folder>-<version>.tgz`, of `pkg` pinned there, or of the package in
 * `node_modules/<packed>` (Codex's platform package, its static binary inside).
 */
async function packPinned(folder: string, pkg: string, source = pkg): Promise<void> {
  const dir = new URL(`./${folder}/`, import.meta.url).pathname;
  const pinned: string = JSON.parse(await Deno.readTextFile(`${dir}package.json`))
    .dependencies[pkg];
  const tarball = `${dir}${folder}-${pinned}.tgz`;
  try {
    if ((await Deno.stat(tarball)).isFile) return;
  } catch { /* pack it */ }
  console.log(`Packing ${pkg} ${pinned} as ${tarball} (npm pack)`);
  const scratch = await Deno.makeTempDir({ dir, prefix: ".pack-" });
  try {
    const npm = await new Deno.Command("npm", {
      // Claude Code's own scripts refuse to pack outside Anthropic's release workflow.
      args: [
        "pack",
        "--ignore-scripts",
        "--loglevel=error",
        "--pack-destination",
        scratch,
        `${dir}node_modules/${source}`,
      ],
      stdout: "null",
      stderr: "inherit",
    }).output();
    const [packed] = [...Deno.readDirSync(scratch)].filter((entry) => entry.name.endsWith(".tgz"));
    if (!npm.success || !packed) {
      console.error(`Cannot pack ${pkg}: npm pack failed`);
      Deno.exit(1);
    }
    await Deno.rename(`${scratch}/${packed.name}`, tarball);
  } finally {
    await Deno.remove(scratch, { recursive: true });
  }
}

await installSystemPackages();
await installPinned("claude-code", "@anthropic-ai/claude-code", { required: tests, ci: true });
// Qwen Code: the qwen_code harness of `/rollout`, the OpenAI-speaking agent of the end-to-end
// tests. Its clipboard dependency lists optional binaries for platforms the registry lacks.
await installPinned("qwen-code", "@qwen-code/qwen-code", { required: tests, ci: false });
await makeRipgrepExecutable();
// Codex: the Responses-speaking agent of the end-to-end tests. Its native binary is the platform
// package npm picks from the lock.
if (tests) await installPinned("codex", "@openai/codex", { required: true, ci: true });
if (tests) {
  await packPinned("claude-code", "@anthropic-ai/claude-code");
  await packPinned("qwen-code", "@qwen-code/qwen-code");
  const arch = Deno.build.arch === "aarch64" ? "arm64" : "x64";
  await packPinned("codex", "@openai/codex", `@openai/codex-linux-${arch}`);
}
