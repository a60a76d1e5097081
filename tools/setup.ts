/**
 * Installs what the test suite needs beyond Deno's own npm packages: the pinned Claude Code CLI
 * (tools/claude-code, with npm). Does nothing when it is already installed at the pinned
 * version, so `deno task test` can run it every time.
 *
 * @module
 */

const dir = new URL("./claude-code/", import.meta.url).pathname;
const pinned: string = JSON.parse(await Deno.readTextFile(`${dir}package.json`))
  .dependencies["@anthropic-ai/claude-code"];

async function installedVersion(): Promise<string | null> {
  try {
    const manifest = `${dir}node_modules/@anthropic-ai/claude-code/package.json`;
    return JSON.parse(await Deno.readTextFile(manifest)).version;
  } catch {
    return null;
  }
}

if ((await installedVersion()) !== pinned) {
  console.log(`Installing Claude Code ${pinned} into tools/claude-code (npm ci)`);
  const npm = await new Deno.Command("npm", {
    args: ["ci", "--no-audit", "--no-fund", "--loglevel=error"],
    cwd: dir,
    stdout: "inherit",
    stderr: "inherit",
  }).output();
  if (!npm.success || (await installedVersion()) !== pinned) {
    console.error("Cannot install the Claude Code CLI: npm ci failed in tools/claude-code");
    Deno.exit(1);
  }
}
