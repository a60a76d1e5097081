/**
 * Installs what the gateway and its tests need beyond Deno's own npm packages, doing nothing
 * for what is already there, so the `serve` and `test` tasks run it every time:
 *
 * - Debian packages, with apt-get (as root, or through sudo): `git` and `bubblewrap` (local
 *   sandboxes) and `python3-pytest` (the test runner of the shipped fixture tasks and the docs'
 *   examples: without it their rollouts grade nothing) for serving; with `--tests` also
 *   `chromium` (the viewer's browser test), `postgresql` (the shared-store tests start
 *   throwaway clusters of their own: installing it starts no service, `policy-rc.d` says no) and
 *   `haproxy` (the load balancer of docs/deploy.md, tested in front of two hosts).
 * - Each listed agent's pinned CLI (`AGENTS`, `lib/agents/agents.ts`; its package pinned in
 *   `tools/<folder>/package.json`, installed from its lock file): the agents of `/rollout` and of
 *   the tests that drive the real CLIs — Claude Code and Qwen Code always, Codex with `--tests`.
 *   With `--tests`, each is also packed as an npm tarball (`tools/<folder>/<folder>-<version>.tgz`:
 *   Claude Code's with its native binary inside, Codex's platform package with its static
 *   binary), which the E2B rollout tests upload and install offline: no test needs the registry.
 *
 * What cannot be installed (no root, no apt, no registry) is reported, not fatal, when serving:
 * the gateway serves without it, and what needs it answers with the reason. The tests need all.
 *
 * @module
 */

import { AGENTS, type AnyAgent, type CliPackage } from "../lib/agents/mod.ts";

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
  { name: "python3-pytest", present: () => runs("/usr/bin/python3", ["-c", "import pytest"]) },
  ...(tests
    ? [
      // The viewer's browser test drives Debian's headless Chromium.
      { name: "chromium", present: () => runs("/usr/bin/chromium", ["--version"]) },
      // The shared-store tests run Debian's PostgreSQL programs (test/_postgres.ts).
      { name: "postgresql", present: () => hasPostgres() },
      // The load balancer of docs/deploy.md, tested in front of two hosts.
      { name: "haproxy", present: () => runs("/usr/sbin/haproxy", ["-v"]) },
    ]
    : []),
];

/** Whether Debian's PostgreSQL server programs are installed. */
async function hasPostgres(): Promise<boolean> {
  try {
    for await (const entry of Deno.readDir("/usr/lib/postgresql")) {
      if (await runs(`/usr/lib/postgresql/${entry.name}/bin/initdb`, ["--version"])) return true;
    }
  } catch { /* none */ }
  return false;
}

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
  // A package's service (PostgreSQL's default cluster) is not started: the tests start their own.
  const policy = "/usr/sbin/policy-rc.d";
  const noServices = !(await exists(policy)) &&
    (await shell(sudo, `printf '#!/bin/sh\\nexit 101\\n' > ${policy} && chmod +x ${policy}`));
  const ok = (await apt(["update", "-qq"])).success &&
    (await apt(["install", "-y", "-qq", "--no-install-recommends", ...missing])).success;
  if (noServices) await shell(sudo, `rm -f ${policy}`);
  if (!ok) console.warn(`Could not install ${missing.join(" ")} with apt-get`);
}

/** Runs `script` with `sh`, as root (through `sudo -n` when `sudo`); whether it succeeded. */
async function shell(sudo: boolean, script: string): Promise<boolean> {
  return sudo ? await runs("sudo", ["-n", "sh", "-c", script]) : await runs("sh", ["-c", script]);
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch {
    return false;
  }
}

/**
 * Installs an agent's pinned CLI in `tools/<folder>` from its lock file, unless the pinned
 * version is there: `npm ci`, or `npm install --no-save` for a package whose other platforms'
 * optional binaries are not on the registry (npm cannot lock them, and `npm ci` then refuses the
 * lock). Then its own step after installing, if it has one.
 */
async function installPinned(cli: CliPackage, required: boolean): Promise<void> {
  const { folder, name: pkg } = cli;
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
  if ((await installedVersion()) !== pinned) {
    const command = await npmInstall(cli, dir, pinned);
    if ((await installedVersion()) !== pinned) {
      console.error(`Cannot install ${pkg}: npm ${command} failed in tools/${folder}`);
      if (required) Deno.exit(1);
      return;
    }
  }
  await cli.afterInstall?.(`${dir}node_modules`);
}

/** Runs npm's install of the pinned CLI in `dir`; resolves to the npm command it ran. */
async function npmInstall(
  { folder, name: pkg, ci }: CliPackage,
  dir: string,
  pinned: string,
): Promise<string> {
  const command = ci ? ["ci"] : ["install", "--no-save"];
  console.log(`Installing ${pkg} ${pinned} into tools/${folder} (npm ${command.join(" ")})`);
  await new Deno.Command("npm", {
    args: [...command, "--no-audit", "--no-fund", "--loglevel=error"],
    cwd: dir,
    stdout: "inherit",
    stderr: "inherit",
  }).output();
  return command[0];
}

/**
 * Packs an installed CLI (Claude Code's already holding its native binary) as an npm tarball,
 * once: `tools/<folder>/<folder>-<version>.tgz`, of `pkg` pinned there, or of the package in
 * `node_modules/<packed>` (Codex's platform package, its static binary inside).
 */
async function packPinned({ folder, name: pkg, packed: source = pkg }: CliPackage): Promise<void> {
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
for (const agent of AGENTS as readonly AnyAgent[]) {
  const cli = agent.package;
  if (cli === undefined || (cli.testsOnly && !tests)) continue;
  await installPinned(cli, tests);
  if (tests) await packPinned(cli);
}
