/**
 * The bubblewrap command line of a local sandbox: the host's file system read-only, the work
 * tree, a home and a private `/tmp` writable, every namespace unshared (no network unless
 * asked), the process tree killed with its parent.
 *
 * @module
 */
import type { HostBind, SandboxUser } from "./sandbox.ts";

/** Where a local sandbox's writable folders appear inside it. */
export const LOCAL_PATHS = {
  workdir: "/sandbox/repo",
  home: "/sandbox/home",
  tmpdir: "/tmp",
} as const;

/** User ids inside the sandbox: an unprivileged user by default, as on E2B. */
const UIDS: Record<SandboxUser, number> = { user: 1000, root: 0 };

/**
 * What root may do inside: Docker's default capabilities, a container's root. File modes do not
 * stop it (`CAP_DAC_OVERRIDE`, `CAP_FOWNER`), as Harbor's verifier relies on; it cannot mount
 * (no `CAP_SYS_ADMIN`), so a folder made read-only for a command stays so.
 */
const ROOT_CAPABILITIES = [
  "CAP_AUDIT_WRITE",
  "CAP_CHOWN",
  "CAP_DAC_OVERRIDE",
  "CAP_FOWNER",
  "CAP_FSETID",
  "CAP_KILL",
  "CAP_MKNOD",
  "CAP_NET_BIND_SERVICE",
  "CAP_NET_RAW",
  "CAP_SETFCAP",
  "CAP_SETGID",
  "CAP_SETPCAP",
  "CAP_SETUID",
  "CAP_SYS_CHROOT",
] as const;

/** A top-level entry of the host's `/`, as seen by `lstat`. */
export interface HostRoot {
  readonly name: string;
  /** Target of a symbolic link (`/bin -> usr/bin`), else `null`. */
  readonly symlink: string | null;
}

/** Host top-level entries never shown inside: kernel file systems (bwrap makes its own), the
 * host's `/tmp` (the sandbox has a private one), `/run` (its sockets reach host daemons even
 * read-only) and the sandbox's own mount point. */
const NOT_BOUND = new Set(["proc", "dev", "sys", "tmp", "run", "sandbox"]);

/** How one command runs under bubblewrap. */
export interface BwrapCommand {
  /** The host's top-level entries, bound read-only. */
  readonly hostRoots: readonly HostRoot[];
  /** Host folders of this sandbox. */
  readonly dirs: { readonly repo: string; readonly home: string; readonly tmp: string };
  /** Host paths hidden behind an empty folder (the gateway's data, other sandboxes). */
  readonly hidden: readonly string[];
  /** Host files or folders shown read-only inside (tools lent from the host). */
  readonly binds?: readonly HostBind[];
  /**
   * Host folders shown writable inside at extra paths (Harbor's `/tests`, `/logs`, the work
   * tree again at `/app`); a host top-level entry of the same first name is not shown.
   */
  readonly writable?: readonly HostBind[];
  readonly command: string;
  readonly cwd: string;
  readonly env: Readonly<Record<string, string>>;
  readonly user: SandboxUser;
  readonly network: boolean;
  /** Folders inside made read-only for this command (`ExecOptions.readOnly`). */
  readonly readOnly?: readonly string[];
}

/** The base environment of every sandboxed command; `env` adds to it. */
export const SANDBOX_BASE_ENV: Readonly<Record<string, string>> = {
  PATH: "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
  HOME: LOCAL_PATHS.home,
  TMPDIR: LOCAL_PATHS.tmpdir,
  LANG: "C.UTF-8",
  // Git refuses repositories owned by another user; inside, every file is the sandbox user's.
  GIT_CONFIG_COUNT: "1",
  GIT_CONFIG_KEY_0: "safe.directory",
  GIT_CONFIG_VALUE_0: "*",
};

/**
 * The arguments of `bwrap` for one command.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { bwrapArgs } from "./bwrap_args.ts";
 * const args = bwrapArgs({
 *   hostRoots: [{ name: "usr", symlink: null }],
 *   dirs: { repo: "/var/sbx/1/repo", home: "/var/sbx/1/home", tmp: "/var/sbx/1/tmp" },
 *   hidden: [],
 *   command: "ls",
 *   cwd: "/sandbox/repo",
 *   env: {},
 *   user: "user",
 *   network: false,
 * });
 * assert.ok(args.includes("--unshare-net"));
 * ```
 */
export function bwrapArgs(spec: BwrapCommand): string[] {
  const uid = String(UIDS[spec.user]);
  const args = [
    "--die-with-parent",
    // No --new-session: the backend starts bwrap in a session of its own, with no terminal to
    // reach, and killing bwrap's process group must also reach a sandbox still being set up.
    "--unshare-user",
    "--unshare-ipc",
    "--unshare-pid",
    "--unshare-uts",
    "--unshare-cgroup-try",
    ...(spec.network ? [] : ["--unshare-net"]),
    "--uid",
    uid,
    "--gid",
    uid,
    "--cap-drop",
    "ALL",
    ...(spec.user === "root" ? ROOT_CAPABILITIES.flatMap((cap) => ["--cap-add", cap]) : []),
    "--hostname",
    "sandbox",
    "--tmpfs",
    "/",
  ];
  const covered = new Set((spec.writable ?? []).map((bind) => bind.inside.split("/")[1]));
  for (const root of spec.hostRoots) {
    if (NOT_BOUND.has(root.name) || covered.has(root.name)) continue;
    if (root.symlink !== null) args.push("--symlink", root.symlink, `/${root.name}`);
    else args.push("--ro-bind", `/${root.name}`, `/${root.name}`);
  }
  for (const path of spec.hidden) args.push("--tmpfs", path);
  args.push(
    "--dev",
    "/dev",
    "--proc",
    "/proc",
    "--bind",
    spec.dirs.tmp,
    LOCAL_PATHS.tmpdir,
    "--bind",
    spec.dirs.home,
    LOCAL_PATHS.home,
    "--bind",
    spec.dirs.repo,
    LOCAL_PATHS.workdir,
    ...(spec.writable ?? []).flatMap((bind) => ["--bind", bind.host, bind.inside]),
    ...(spec.binds ?? []).flatMap((bind) => ["--ro-bind", bind.host, bind.inside]),
    ...(spec.readOnly ?? []).flatMap((path) => ["--remount-ro", path]),
    "--chdir",
    spec.cwd,
    "--clearenv",
  );
  for (const [name, value] of Object.entries({ ...SANDBOX_BASE_ENV, ...spec.env })) {
    args.push("--setenv", name, value);
  }
  args.push("--", "/bin/bash", "-c", spec.command);
  return args;
}
