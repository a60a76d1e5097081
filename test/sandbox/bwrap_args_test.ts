import assert from "node:assert/strict";
import {
  bwrapArgs,
  type BwrapCommand,
  LOCAL_PATHS,
  SANDBOX_BASE_ENV,
} from "../../lib/sandbox/bwrap_args.ts";

/** A host like Debian's: merged `/usr`, kernel file systems, and a `/sandbox` of its own. */
const SPEC: BwrapCommand = {
  hostRoots: [
    { name: "bin", symlink: "usr/bin" },
    { name: "dev", symlink: null },
    { name: "etc", symlink: null },
    { name: "home", symlink: null },
    { name: "lib", symlink: "usr/lib" },
    { name: "proc", symlink: null },
    { name: "run", symlink: null },
    { name: "sandbox", symlink: null },
    { name: "sys", symlink: null },
    { name: "tmp", symlink: null },
    { name: "usr", symlink: null },
    { name: "var", symlink: null },
  ],
  dirs: { repo: "/srv/sbx/s1/repo", home: "/srv/sbx/s1/home", tmp: "/srv/sbx/s1/tmp" },
  hidden: ["/srv/sbx", "/var/lib/gateway"],
  command: "pytest -q",
  cwd: "/sandbox/repo",
  env: {},
  user: "user",
  network: false,
};

/** The values following each occurrence of `flag`, `arity` at a time. */
function after(args: readonly string[], flag: string, arity: number): string[][] {
  const found: string[][] = [];
  args.forEach((arg, index) => {
    if (arg === flag) found.push(args.slice(index + 1, index + 1 + arity));
  });
  return found;
}

Deno.test("bwrapArgs() builds the whole command line of a sandboxed command", () => {
  const env = Object.entries(SANDBOX_BASE_ENV).flatMap(([name, value]) => [
    "--setenv",
    name,
    value,
  ]);
  assert.deepEqual(bwrapArgs(SPEC), [
    "--die-with-parent",
    "--unshare-user",
    "--unshare-ipc",
    "--unshare-pid",
    "--unshare-uts",
    "--unshare-cgroup-try",
    "--unshare-net",
    ...["--uid", "1000", "--gid", "1000", "--cap-drop", "ALL"],
    ...["--hostname", "sandbox", "--tmpfs", "/"],
    ...["--symlink", "usr/bin", "/bin"],
    ...["--ro-bind", "/etc", "/etc"],
    ...["--ro-bind", "/home", "/home"],
    ...["--symlink", "usr/lib", "/lib"],
    ...["--ro-bind", "/usr", "/usr"],
    ...["--ro-bind", "/var", "/var"],
    ...["--tmpfs", "/srv/sbx", "--tmpfs", "/var/lib/gateway"],
    ...["--dev", "/dev", "--proc", "/proc"],
    ...["--bind", "/srv/sbx/s1/tmp", "/tmp"],
    ...["--bind", "/srv/sbx/s1/home", "/sandbox/home"],
    ...["--bind", "/srv/sbx/s1/repo", "/sandbox/repo"],
    ...["--chdir", "/sandbox/repo", "--clearenv"],
    ...env,
    ...["--", "/bin/bash", "-c", "pytest -q"],
  ]);
});

Deno.test("bwrapArgs() unshares the network unless network is true", () => {
  const unshared = (args: string[]) => args.filter((arg) => arg.startsWith("--unshare-"));
  const others = [
    "--unshare-user",
    "--unshare-ipc",
    "--unshare-pid",
    "--unshare-uts",
    "--unshare-cgroup-try",
  ];
  assert.deepEqual(unshared(bwrapArgs(SPEC)), [...others, "--unshare-net"]);
  assert.deepEqual(unshared(bwrapArgs({ ...SPEC, network: true })), others);
});

Deno.test("bwrapArgs() binds host roots read-only except proc, dev, sys, tmp, run and sandbox", () => {
  const args = bwrapArgs(SPEC);
  assert.deepEqual(after(args, "--ro-bind", 2), [
    ["/etc", "/etc"],
    ["/home", "/home"],
    ["/usr", "/usr"],
    ["/var", "/var"],
  ]);
  // The kernel file systems are bwrap's own, never the host's.
  assert.deepEqual(after(args, "--dev", 1), [["/dev"]]);
  assert.deepEqual(after(args, "--proc", 1), [["/proc"]]);
  for (const name of ["/run", "/sys", "/sandbox"]) assert.equal(args.includes(name), false, name);
});

Deno.test("bwrapArgs() recreates symlinked host roots as symlinks, not binds", () => {
  assert.deepEqual(after(bwrapArgs(SPEC), "--symlink", 2), [
    ["usr/bin", "/bin"],
    ["usr/lib", "/lib"],
  ]);
});

Deno.test("bwrapArgs() hides each hidden path behind a tmpfs laid over the read-only binds", () => {
  const args = bwrapArgs(SPEC);
  assert.deepEqual(after(args, "--tmpfs", 1), [["/"], ["/srv/sbx"], ["/var/lib/gateway"]]);
  // A tmpfs covers what is bound before it, so every hidden path comes after the host roots.
  const lastRoot = args.lastIndexOf("--ro-bind");
  assert.ok(args.indexOf("/srv/sbx") > lastRoot && args.indexOf("/var/lib/gateway") > lastRoot);
});

Deno.test("bwrapArgs() binds the sandbox's three writable folders at LOCAL_PATHS", () => {
  assert.deepEqual(LOCAL_PATHS, {
    workdir: "/sandbox/repo",
    home: "/sandbox/home",
    tmpdir: "/tmp",
  });
  const args = bwrapArgs(SPEC);
  assert.deepEqual(after(args, "--bind", 2), [
    [SPEC.dirs.tmp, LOCAL_PATHS.tmpdir],
    [SPEC.dirs.home, LOCAL_PATHS.home],
    [SPEC.dirs.repo, LOCAL_PATHS.workdir],
  ]);
  // Bound after the tmpfs of the hidden paths, so hiding the sandboxes' root hides none of them.
  assert.ok(args.indexOf("--bind") > args.indexOf("/var/lib/gateway"));
});

Deno.test("bwrapArgs() clears the environment and sets the base one plus extras, extras winning", () => {
  const args = bwrapArgs({ ...SPEC, env: { LANG: "C", FOO: "bar baz" } });
  const set = after(args, "--setenv", 2);
  assert.deepEqual(Object.fromEntries(set), { ...SANDBOX_BASE_ENV, LANG: "C", FOO: "bar baz" });
  assert.equal(set.length, Object.keys(SANDBOX_BASE_ENV).length + 1, "LANG is set once");
  assert.ok(args.indexOf("--clearenv") < args.indexOf("--setenv"));
  assert.deepEqual(SANDBOX_BASE_ENV, {
    PATH: "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    HOME: "/sandbox/home",
    TMPDIR: "/tmp",
    LANG: "C.UTF-8",
    GIT_CONFIG_COUNT: "1",
    GIT_CONFIG_KEY_0: "safe.directory",
    GIT_CONFIG_VALUE_0: "*",
  });
});

Deno.test("bwrapArgs() runs as uid and gid 1000 for user and 0 for root", () => {
  const ids = (args: string[]) => [...after(args, "--uid", 1), ...after(args, "--gid", 1)];
  assert.deepEqual(ids(bwrapArgs(SPEC)), [["1000"], ["1000"]]);
  assert.deepEqual(ids(bwrapArgs({ ...SPEC, user: "root" })), [["0"], ["0"]]);
});

Deno.test("bwrapArgs() gives root a container root's capabilities, none of them mounting, and the user none", () => {
  const added = (args: string[]) =>
    args.flatMap((arg, i) => (args[i - 1] === "--cap-add" ? [arg] : []));
  assert.deepEqual(added(bwrapArgs(SPEC)), []);
  const root = added(bwrapArgs({ ...SPEC, user: "root" }));
  assert.ok(root.includes("CAP_DAC_OVERRIDE") && root.includes("CAP_FOWNER"));
  assert.ok(!root.includes("CAP_SYS_ADMIN"));
  // Every capability is dropped first: only those added are kept.
  assert.deepEqual(after(bwrapArgs(SPEC), "--cap-drop", 1), [["ALL"]]);
});

Deno.test("bwrapArgs() remounts the folders a command must not write read-only, after its binds", () => {
  const args = bwrapArgs({
    ...SPEC,
    writable: [{ host: "/var/sbx/1/tests", inside: "/tests" }],
    readOnly: ["/tests"],
  });
  assert.ok(args.indexOf("--remount-ro") > args.lastIndexOf("/var/sbx/1/tests"));
  assert.deepEqual(after(args, "--remount-ro", 1), [["/tests"]]);
});

Deno.test("bwrapArgs() ends with the command as one argument of /bin/bash -c, in cwd", () => {
  const command = `cd "a b" && echo '$HOME' -- --tmpfs /`;
  const args = bwrapArgs({ ...SPEC, command, cwd: "/sandbox/repo/src" });
  assert.deepEqual(args.slice(-4), ["--", "/bin/bash", "-c", command]);
  assert.deepEqual(after(args, "--chdir", 1), [["/sandbox/repo/src"]]);
});
