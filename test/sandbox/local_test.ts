import assert from "node:assert/strict";
import { SANDBOX_BASE_ENV } from "../../lib/sandbox/bwrap_args.ts";
import { LocalBackend, type LocalBackendOptions } from "../../lib/sandbox/local.ts";
import {
  type ExecResult,
  RepoError,
  type Sandbox,
  type SandboxSpec,
} from "../../lib/sandbox/sandbox.ts";
import { hostProcesses } from "../../lib/sandbox/mod.ts";
import { makeRepo, type TestRepo } from "../_git_repo.ts";
import { processesWith } from "../_host.ts";

/** A backend on a new root folder, with the three-commit test repository to make sandboxes of. */
interface Fixture {
  readonly backend: LocalBackend;
  readonly root: string;
  readonly repo: TestRepo;
  /** A sandbox of the repository at its HEAD, without network, unless `spec` says otherwise. */
  create(spec?: Partial<SandboxSpec>): Promise<Sandbox>;
}

/**
 * Runs `run` with a fresh backend; afterwards closes it (killing every sandbox) and removes its
 * root and the repository. `parent` is where the root is made (the host's /tmp by default).
 */
async function withBackend(
  run: (fixture: Fixture) => Promise<void>,
  options: { readonly parent?: string } & Omit<LocalBackendOptions, "root"> = {},
): Promise<void> {
  const root = await Deno.makeTempDir({ dir: options.parent, prefix: "sbx-root-" });
  let repo: TestRepo | null = null;
  let backend: LocalBackend | null = null;
  try {
    repo = await makeRepo();
    backend = new LocalBackend({ ...options, root });
    const spec: SandboxSpec = {
      repo: { kind: "path", path: repo.path },
      commit: repo.commits[2],
      network: false,
      lifetimeMs: 60_000,
    };
    const made = backend;
    await run({ backend, root, repo, create: (extra = {}) => made.create({ ...spec, ...extra }) });
  } finally {
    await backend?.close();
    await Deno.remove(root, { recursive: true });
    if (repo) await Deno.remove(repo.path, { recursive: true });
  }
}

/** Runs `run` with one sandbox of the test repository at HEAD (see `withBackend`). */
function withSandbox(
  run: (sandbox: Sandbox, fixture: Fixture) => Promise<void>,
  spec: Partial<SandboxSpec> = {},
): Promise<void> {
  return withBackend(async (fixture) => run(await fixture.create(spec), fixture));
}

/** A result without its duration, to compare whole. */
function outcome({ durationMs: _, ...rest }: ExecResult) {
  return rest;
}

/** The parent of every live (not zombie) process on the host, by pid. */
function parents(): Map<number, number> {
  return new Map(hostProcesses().map(({ pid, ppid }) => [pid, ppid]));
}

/** `root` and every live process descended from it. */
function processTree(root: number): number[] {
  const parentOf = parents();
  const tree = [root];
  for (let i = 0; i < tree.length; i++) {
    for (const [pid, parent] of parentOf) if (parent === tree[i]) tree.push(pid);
  }
  return tree;
}

/** A unique word to find a test's processes by. */
const newMarker = () => `sbx-marker-${crypto.randomUUID()}`;

/**
 * Starts a tree of processes that sleep forever, each named `marker`: one keeping the command's
 * output open, twenty with their output elsewhere (which nothing waits for but their killer), one
 * in a session of its own; then runs `then`.
 */
function sleepingTree(marker: string, then = `exec -a ${marker} sleep infinity`): string {
  return [
    `(exec -a ${marker} sleep infinity) &`,
    `for i in $(seq 20); do (exec -a ${marker} sleep infinity) </dev/null >/dev/null 2>&1 & done`,
    `setsid bash -c 'exec -a ${marker} sleep infinity' </dev/null >/dev/null 2>&1 &`,
    then,
  ].join("\n");
}

/** A command that fetches `url` and prints the body (exit 1 when it cannot connect). */
const fetchCommand = (url: string) =>
  `python3 -c 'import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode())' ${url}`;

/** Runs `run` with an HTTP server on 127.0.0.1 answering `pong` and counting requests. */
async function withServer(
  run: (server: { url: string; requests: () => number; arrived: Promise<void> }) => Promise<void>,
): Promise<void> {
  let requests = 0;
  const arrived = Promise.withResolvers<void>();
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, () => {
    requests++;
    arrived.resolve();
    return new Response("pong");
  });
  try {
    await run({
      url: `http://127.0.0.1:${server.addr.port}/`,
      requests: () => requests,
      arrived: arrived.promise,
    });
  } finally {
    await server.shutdown();
  }
}

const exists = (path: string) =>
  Deno.lstat(path).then(() => true, (error) => {
    if (error instanceof Deno.errors.NotFound) return false;
    throw error;
  });

const names = (dir: string) => [...Deno.readDirSync(dir)].map((entry) => entry.name).sort();

Deno.test("LocalBackend.create() checks out a non-HEAD commit as a clean, detached work tree", async () => {
  await withBackend(async ({ create, repo }) => {
    const first = repo.commits[0];
    const sandbox = await create({ commit: first });
    assert.equal(sandbox.backend, "local");
    assert.equal(sandbox.workdir, "/sandbox/repo");
    assert.equal(sandbox.tmpdir, "/tmp");
    const result = await sandbox.exec(
      "cat a.txt; ls -A; git status --porcelain; git rev-parse HEAD; git symbolic-ref -q HEAD || echo detached",
      { timeoutMs: 10_000 },
    );
    assert.deepEqual(outcome(result), {
      exitCode: 0,
      stdout: `one\n.git\na.txt\n${first}\ndetached\n`,
      stderr: "",
      timedOut: false,
      truncated: false,
    });
  });
});

Deno.test("exec() returns the command's stdout, stderr and exit code", async () => {
  await withSandbox(async (sandbox) => {
    const result = await sandbox.exec("printf out; printf err >&2; exit 3", { timeoutMs: 10_000 });
    assert.deepEqual(outcome(result), {
      exitCode: 3,
      stdout: "out",
      stderr: "err",
      timedOut: false,
      truncated: false,
    });
    assert.ok(result.durationMs >= 0 && result.durationMs < 10_000);
  });
});

Deno.test("exec() runs in the work tree unless cwd says otherwise", async () => {
  await withSandbox(async (sandbox) => {
    const cwds = [];
    for (const cwd of [undefined, "/tmp", "/sandbox/home"]) {
      cwds.push((await sandbox.exec("pwd", { timeoutMs: 10_000, cwd })).stdout);
    }
    assert.deepEqual(cwds, ["/sandbox/repo\n", "/tmp\n", "/sandbox/home\n"]);
  });
});

Deno.test("exec() sees only the base environment plus env, env winning", async () => {
  await withSandbox(async (sandbox) => {
    const result = await sandbox.exec("env -0", {
      timeoutMs: 10_000,
      env: { FOO: "bar baz", LANG: "C" },
    });
    const env: Record<string, string> = Object.fromEntries(
      result.stdout.split("\0").filter(Boolean).map((line) => {
        const at = line.indexOf("=");
        return [line.slice(0, at), line.slice(at + 1)];
      }),
    );
    // Bash itself sets the last three.
    const { PWD, SHLVL: _shlvl, _: _lastArgument, ...rest } = env;
    assert.deepEqual(rest, { ...SANDBOX_BASE_ENV, FOO: "bar baz", LANG: "C" });
    assert.equal(PWD, "/sandbox/repo");
  });
});

Deno.test("exec() runs as uid 1000 for user, the default, and uid 0 for root", async () => {
  await withSandbox(async (sandbox) => {
    const ids = [];
    for (const user of [undefined, "user", "root"] as const) {
      ids.push((await sandbox.exec("id -u; id -g", { timeoutMs: 10_000, user })).stdout);
    }
    assert.deepEqual(ids, ["1000\n1000\n", "1000\n1000\n", "0\n0\n"]);
  });
});

Deno.test("the host file system is read-only inside, even to root, while the work tree, $HOME and /tmp are writable", async () => {
  await withSandbox(async (sandbox) => {
    const name = `sbx-probe-${crypto.randomUUID()}`;
    const touch = (dir: string) =>
      `touch ${dir}/${name} 2>/dev/null && echo "wrote ${dir}" || echo "refused ${dir}"`;
    const tryWrite = (dirs: string[]) => dirs.map(touch).join("\n");
    const host = ["/usr", "/etc", "/var", "/home", "/root"];
    const refused = await sandbox.exec(tryWrite(host), { timeoutMs: 10_000, user: "root" });
    assert.equal(refused.stdout, host.map((dir) => `refused ${dir}\n`).join(""));
    for (const dir of host) assert.equal(await exists(`${dir}/${name}`), false, dir);
    const why = await sandbox.exec(`touch /usr/${name}`, { timeoutMs: 10_000, user: "root" });
    assert.match(why.stderr, /Read-only file system/);

    const own = ["/sandbox/repo", "/sandbox/home", "/tmp"];
    const wrote = await sandbox.exec(tryWrite(own), { timeoutMs: 10_000 });
    assert.equal(wrote.stdout, own.map((dir) => `wrote ${dir}\n`).join(""));
  });
});

Deno.test("/tmp inside is private to the sandbox and persists across its commands", async () => {
  const hostFile = await Deno.makeTempFile({ dir: "/tmp", prefix: "sbx-host-" });
  try {
    await withSandbox(async (sandbox) => {
      const seen = await sandbox.exec(`test -e ${hostFile} && echo visible || echo absent`, {
        timeoutMs: 10_000,
      });
      assert.equal(seen.stdout, "absent\n");
      await sandbox.exec("echo kept > /tmp/keep", { timeoutMs: 10_000 });
      const kept = await sandbox.exec("cat /tmp/keep; ls -A /tmp", { timeoutMs: 10_000 });
      assert.equal(kept.stdout, "kept\nkeep\n");
    });
  } finally {
    await Deno.remove(hostFile);
  }
});

Deno.test("hidden host folders and the backend's own root appear empty inside", async () => {
  // Under /var/tmp, not /tmp: the host's /tmp is not shown inside at all.
  const hidden = await Deno.makeTempDir({ dir: "/var/tmp", prefix: "sbx-hidden-" });
  const shown = await Deno.makeTempDir({ dir: "/var/tmp", prefix: "sbx-shown-" });
  try {
    await Deno.writeTextFile(`${hidden}/secret.txt`, "secret");
    await Deno.writeTextFile(`${shown}/public.txt`, "public");
    await withBackend(async ({ create, root }) => {
      const sandbox = await create();
      assert.equal(names(root).includes(sandbox.id), true);
      const result = await sandbox.exec(
        `ls -A ${hidden}; echo --; ls -A ${shown}; echo --; ls -A ${root}`,
        { timeoutMs: 10_000, user: "root" },
      );
      assert.deepEqual(outcome(result), {
        exitCode: 0,
        stdout: "--\npublic.txt\n--\n",
        stderr: "",
        timedOut: false,
        truncated: false,
      });
    }, { parent: "/var/tmp", hidden: [hidden] });
  } finally {
    await Deno.remove(hidden, { recursive: true });
    await Deno.remove(shown, { recursive: true });
  }
});

Deno.test("exec() keeps the last outputBytes of stdout and of stderr and reports truncation", async () => {
  await withSandbox(async (sandbox) => {
    const short = await sandbox.exec(
      "printf 0123456789abcdefghij; printf ABCDEFGHIJKLMNOPQRST >&2",
      { timeoutMs: 10_000, outputBytes: 10 },
    );
    assert.deepEqual(outcome(short), {
      exitCode: 0,
      stdout: "abcdefghij",
      stderr: "KLMNOPQRST",
      timedOut: false,
      truncated: true,
    });
    const long = await sandbox.exec("head -c 1000000 /dev/zero | tr '\\0' x; printf END", {
      timeoutMs: 10_000,
      outputBytes: 6,
    });
    assert.deepEqual(outcome(long), {
      exitCode: 0,
      stdout: "xxxEND",
      stderr: "",
      timedOut: false,
      truncated: true,
    });
  });
});

Deno.test("exec() kills the whole process tree at timeoutMs, reporting timedOut and no exit code", async () => {
  await withSandbox(async (sandbox) => {
    const marker = newMarker();
    const result = await sandbox.exec(sleepingTree(marker), { timeoutMs: 200 });
    assert.deepEqual(outcome(result), {
      exitCode: null,
      stdout: "",
      stderr: "",
      timedOut: true,
      truncated: false,
    });
    assert.ok(result.durationMs >= 200 && result.durationMs < 10_000, `${result.durationMs} ms`);
    assert.deepEqual(await processesWith(marker), []);
  });
});

Deno.test("exec() kills the whole process tree when its signal is aborted", async () => {
  await withServer(async (server) => {
    await withSandbox(async (sandbox) => {
      const marker = newMarker();
      const controller = new AbortController();
      // The last command is named too, for the check afterwards: bash becomes it.
      const command = `${fetchCommand(server.url)}\nexec -a ${marker} sleep infinity`;
      const running = sandbox.exec(sleepingTree(marker, command), {
        timeoutMs: 60_000,
        signal: controller.signal,
      });
      await server.arrived; // the tree is started before the request is made
      // Found by parent links, as a command line is briefly empty while a process execs.
      const parentOf = parents();
      const bwrap = (await processesWith(marker)).find(({ pid }) => parentOf.get(pid) === Deno.pid);
      assert.ok(bwrap);
      const tree = processTree(bwrap.pid);
      controller.abort();
      const result = await running;
      assert.deepEqual(
        { exitCode: result.exitCode, timedOut: result.timedOut },
        { exitCode: null, timedOut: false },
      );
      // bwrap twice, bash, and 22 sleepers (or the subshells about to become them).
      assert.ok(tree.length >= 25, `${tree.length} processes`);
      const alive = parents();
      assert.deepEqual(tree.filter((pid) => alive.has(pid)), []);
      assert.deepEqual(await processesWith(marker), []);
    }, { network: true });
  });
});

Deno.test("exec() killed while bwrap is still setting the sandbox up leaves no process behind", async () => {
  await withSandbox(async (sandbox) => {
    const marker = newMarker();
    const command = `exec -a ${marker} sleep infinity`;
    // Setting a sandbox up takes bwrap a few milliseconds: these timeouts fall inside it.
    const timeouts = [1, 2, 3, 4, 6, 8];
    const outcomes = [];
    for (const timeoutMs of timeouts) {
      const { exitCode, timedOut } = await sandbox.exec(command, { timeoutMs });
      outcomes.push({ exitCode, timedOut });
    }
    assert.deepEqual(outcomes, timeouts.map(() => ({ exitCode: null, timedOut: true })));
    assert.deepEqual(await processesWith(marker), []);
  });
});

Deno.test("exec() with a signal already aborted kills the command at once", async () => {
  await withSandbox(async (sandbox) => {
    const marker = newMarker();
    const result = await sandbox.exec(sleepingTree(marker), {
      timeoutMs: 5_000,
      signal: AbortSignal.abort(),
    });
    assert.deepEqual(
      { exitCode: result.exitCode, timedOut: result.timedOut },
      { exitCode: null, timedOut: false },
    );
    assert.deepEqual(await processesWith(marker), []);
  });
});

Deno.test("a sandbox reaches the host's network only when created with network: true", async () => {
  await withServer(async (server) => {
    await withBackend(async ({ create }) => {
      const offline = await create({ network: false });
      const cut = await offline.exec(fetchCommand(server.url), { timeoutMs: 20_000 });
      assert.equal(cut.exitCode, 1);
      assert.equal(cut.stdout, "");
      assert.match(cut.stderr, /Connection refused|Network is unreachable/);
      assert.equal(server.requests(), 0);

      const online = await create({ network: true });
      const reached = await online.exec(fetchCommand(server.url), { timeoutMs: 20_000 });
      assert.deepEqual(outcome(reached), {
        exitCode: 0,
        stdout: "pong\n",
        stderr: "",
        timedOut: false,
        truncated: false,
      });
      assert.equal(server.requests(), 1);
    });
  });
});

Deno.test("writeFile() and readFile() round-trip with commands through the sandbox's paths", async () => {
  await withSandbox(async (sandbox) => {
    await sandbox.writeFile(`${sandbox.workdir}/x`, "from the host");
    await sandbox.writeFile(`${sandbox.tmpdir}/deep/er/y.bin`, new Uint8Array([0, 1, 2, 255]));
    const seen = await sandbox.exec("cat x; echo; od -An -tu1 /tmp/deep/er/y.bin | tr -s ' '", {
      timeoutMs: 10_000,
    });
    assert.equal(seen.stdout, "from the host\n 0 1 2 255\n");

    await sandbox.exec("printf 'made inside' > /sandbox/home/z; printf '\\377\\000' > sub.bin", {
      timeoutMs: 10_000,
    });
    assert.deepEqual(
      [
        new TextDecoder().decode(await sandbox.readFile("/sandbox/home/z")),
        [...await sandbox.readFile(`${sandbox.workdir}/sub.bin`)],
      ],
      ["made inside", [255, 0]],
    );
    await assert.rejects(sandbox.readFile("/tmp/missing"), Deno.errors.NotFound);
  });
});

Deno.test("readFile() and writeFile() refuse a symlink planted inside that points to the host", async () => {
  await withSandbox(async (sandbox) => {
    await sandbox.exec("ln -s /etc etc; ln -s /etc/hostname hostname", { timeoutMs: 10_000 });
    const escapes = { name: "RangeError", message: /escapes its folder/ };
    await assert.rejects(sandbox.readFile(`${sandbox.workdir}/etc/hostname`), escapes);
    await assert.rejects(sandbox.readFile(`${sandbox.workdir}/hostname`), escapes);
    await assert.rejects(sandbox.writeFile(`${sandbox.workdir}/etc/evil`, "x"), escapes);
    await assert.rejects(sandbox.writeFile(`${sandbox.workdir}/hostname`, "x"), escapes);
    await assert.rejects(sandbox.readFile("/etc/hostname"), {
      name: "RangeError",
      message: /outside the sandbox's folders/,
    });
    assert.equal(await exists("/etc/evil"), false);
  });
});

Deno.test("kill() stops a running command, removes the sandbox folder and is idempotent", async () => {
  await withBackend(async ({ create, root }) => {
    const sandbox = await create();
    const marker = newMarker();
    assert.equal(await exists(`${root}/${sandbox.id}`), true);
    const running = sandbox.exec(sleepingTree(marker), { timeoutMs: 60_000 });
    await sandbox.kill();
    const result = await running;
    assert.deepEqual(
      { exitCode: result.exitCode, timedOut: result.timedOut },
      { exitCode: null, timedOut: false },
    );
    assert.equal(await exists(`${root}/${sandbox.id}`), false);
    assert.deepEqual(await processesWith(marker), []);
    await sandbox.kill();
    await assert.rejects(sandbox.exec("true", { timeoutMs: 10_000 }), /was killed/);
    assert.deepEqual(names(root), []);
  });
});

Deno.test("a sandbox is killed when its lifetimeMs runs out, counted once it is ready", async () => {
  await withBackend(async ({ create, root }) => {
    // Far shorter than a checkout: a clock started before it would kill the sandbox mid-clone.
    const sandbox = await create({ lifetimeMs: 1 });
    const result = await sandbox.exec("sleep infinity", { timeoutMs: 60_000 });
    assert.deepEqual(
      { exitCode: result.exitCode, timedOut: result.timedOut },
      { exitCode: null, timedOut: false },
    );
    await sandbox.kill(); // the kill already under way
    assert.deepEqual(names(root), []);
  });
});

Deno.test("create() throws RepoError naming a path that is not a git repository", async () => {
  const notRepo = await Deno.makeTempDir({ prefix: "sbx-not-a-repo-" });
  try {
    await withBackend(async ({ create, repo, root }) => {
      await assert.rejects(
        create({ repo: { kind: "path", path: notRepo }, commit: repo.commits[0] }),
        (error: unknown) => {
          assert.ok(error instanceof RepoError);
          assert.match(error.message, new RegExp(`"${notRepo}" is not a git repository`));
          return true;
        },
      );
      assert.deepEqual(names(root), []);
    });
  } finally {
    await Deno.remove(notRepo, { recursive: true });
  }
});

Deno.test("create() throws RepoError naming an unknown commit", async () => {
  await withBackend(async ({ create, root, repo }) => {
    await assert.rejects(create({ commit: "0badc0de" }), (error: unknown) => {
      assert.ok(error instanceof RepoError);
      assert.match(error.message, /Commit "0badc0de" cannot be checked out/);
      assert.match(error.message, new RegExp(repo.path));
      return true;
    });
    assert.deepEqual(names(root), []);
  });
});

Deno.test("create() throws RepoError for an image repository, which the local backend lacks", async () => {
  await withBackend(async ({ create, root }) => {
    await assert.rejects(create({ repo: { kind: "image", dir: "/testbed" } }), (error: unknown) => {
      assert.ok(error instanceof RepoError);
      assert.match(error.message, /"\/testbed"/);
      return true;
    });
    assert.deepEqual(names(root), []);
  });
});

Deno.test("create() shows a host file read-only under /sandbox/tools/ and refuses a bind elsewhere", async () => {
  await withBackend(async ({ create, root, repo }) => {
    const sandbox = await create({
      binds: [{ host: `${repo.path}/b.txt`, inside: "/sandbox/tools/b.txt" }],
    });
    const result = await sandbox.exec("cat /sandbox/tools/b.txt; echo x > /sandbox/tools/b.txt", {
      timeoutMs: 10_000,
    });
    assert.equal(result.stdout, "bee\n");
    assert.match(result.stderr, /Read-only file system/);
    await sandbox.kill();
    await assert.rejects(
      create({ binds: [{ host: `${repo.path}/b.txt`, inside: "/usr/bin/b" }] }),
      {
        name: "RangeError",
        message: 'Bind target "/usr/bin/b" is not a path under /sandbox/tools/',
      },
    );
    assert.deepEqual(names(root), []);
  });
});

Deno.test("create() clones a repository given by URL", async () => {
  await withBackend(async ({ create, repo }) => {
    const sandbox = await create({ repo: { kind: "url", url: `file://${repo.path}` } });
    const result = await sandbox.exec("cat a.txt; git rev-parse HEAD", { timeoutMs: 10_000 });
    assert.equal(result.stdout, `three\n${repo.commits[2]}\n`);
  });
});

Deno.test("create() aborted while cloning throws the abort and leaves no folder or git process", async () => {
  // A git server that answers (not found) only once the clone is aborted, or the test is over.
  const controller = new AbortController();
  const arrived = Promise.withResolvers<void>();
  const release = Promise.withResolvers<void>();
  controller.signal.addEventListener("abort", () => release.resolve(), { once: true });
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async () => {
    arrived.resolve();
    await release.promise;
    return new Response("gone", { status: 404 });
  });
  try {
    await withBackend(async ({ create, root }) => {
      const url = `http://127.0.0.1:${server.addr.port}/${crypto.randomUUID()}.git`;
      const creating = create({ repo: { kind: "url", url }, signal: controller.signal });
      await arrived.promise; // git is cloning, through its remote-http helper
      controller.abort();
      await assert.rejects(creating, { name: "AbortError" });
      assert.deepEqual(names(root), []);
      assert.deepEqual(await processesWith(url), []);
    });
  } finally {
    release.resolve();
    await server.shutdown();
  }
});

Deno.test("close() during a create() aborts its clone and leaves no folder or git process", async () => {
  const arrived = Promise.withResolvers<void>();
  const release = Promise.withResolvers<void>();
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async () => {
    arrived.resolve();
    await release.promise;
    return new Response("gone", { status: 404 });
  });
  try {
    await withBackend(async ({ backend, create, root }) => {
      const url = `http://127.0.0.1:${server.addr.port}/${crypto.randomUUID()}.git`;
      const creating = create({ repo: { kind: "url", url } });
      await arrived.promise;
      await backend.close();
      await assert.rejects(creating, /The local sandbox backend is closing/);
      assert.deepEqual(names(root), []);
      assert.deepEqual(await processesWith(url), []);
    });
  } finally {
    release.resolve();
    await server.shutdown();
  }
});

Deno.test("close() kills every live sandbox, running commands included", async () => {
  await withBackend(async ({ backend, create, root }) => {
    const busy = await create();
    const idle = await create();
    assert.deepEqual(names(root), [busy.id, idle.id].sort());
    const running = busy.exec("sleep infinity", { timeoutMs: 60_000 });
    await backend.close();
    assert.equal((await running).exitCode, null);
    assert.deepEqual(names(root), []);
    for (const sandbox of [busy, idle]) {
      await assert.rejects(sandbox.exec("true", { timeoutMs: 10_000 }), /was killed/);
    }
  });
});

Deno.test("the first create() removes sandbox folders of dead owners and keeps those of live ones", async () => {
  await withBackend(async ({ create, root }) => {
    const gone = new Deno.Command("true").spawn();
    await gone.status; // reaped: its pid names no process now
    const here = Deno.hostname();
    const owners: Record<string, { host: string; pid: number } | null> = {
      sbx_dead: { host: here, pid: gone.pid },
      sbx_live: { host: here, pid: Deno.pid },
      sbx_other_host: { host: `not-${here}`, pid: gone.pid },
      sbx_no_owner: null,
    };
    for (const [name, owner] of Object.entries(owners)) {
      await Deno.mkdir(`${root}/${name}/repo`, { recursive: true });
      if (owner) await Deno.writeTextFile(`${root}/${name}/owner.json`, JSON.stringify(owner));
    }
    const sandbox = await create();
    assert.deepEqual(
      names(root),
      [sandbox.id, "sbx_live", "sbx_no_owner", "sbx_other_host"].sort(),
    );
    assert.deepEqual(JSON.parse(await Deno.readTextFile(`${root}/${sandbox.id}/owner.json`)), {
      host: here,
      pid: Deno.pid,
    });
  });
});
