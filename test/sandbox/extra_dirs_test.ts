/**
 * A sandbox's extra paths: empty writable folders (Harbor's `/tests` and `/logs`) and the work
 * tree shown again at an alias (`/app`), on the local backend under real bubblewrap; the paths
 * that may not be used for them.
 */
import assert from "node:assert/strict";
import { bwrapArgs, type BwrapCommand } from "../../lib/sandbox/bwrap_args.ts";
import { LocalBackend } from "../../lib/sandbox/local.ts";
import { extraPathProblem, type SandboxSpec } from "../../lib/sandbox/sandbox.ts";
import { makeRepo } from "../_git_repo.ts";

Deno.test("extraPathProblem() allows plain absolute paths outside the system's and the sandbox's own", () => {
  for (const path of ["/tests", "/logs", "/app", "/workspace/project", "/a.b/c_d/e-f/g"]) {
    assert.equal(extraPathProblem(path), null, path);
  }
  const problems: [string, RegExp][] = [
    ["tests", /not an absolute path/],
    ["/", /not an absolute path/],
    ["/tests/", /not an absolute path/],
    ["/a b", /not an absolute path/],
    ["/a/b/c/d/e", /one to four plain names/],
    ["/app/../usr", /has a "\." or "\.\." part/],
    ["/usr/local/app", /"\/usr" is the system's or the sandbox's own/],
    ["/tmp", /"\/tmp" is the system's/],
    ["/sandbox/x", /"\/sandbox" is the system's/],
    ["/proc", /"\/proc"/],
  ];
  for (const [path, expected] of problems) assert.match(extraPathProblem(path) ?? "", expected);
});

Deno.test("bwrapArgs() binds writable extras read-write and leaves out a host root they cover", () => {
  const spec: BwrapCommand = {
    hostRoots: [{ name: "usr", symlink: null }, { name: "app", symlink: null }],
    dirs: { repo: "/s/repo", home: "/s/home", tmp: "/s/tmp" },
    hidden: [],
    writable: [{ host: "/s/extra/0", inside: "/tests" }, { host: "/s/repo", inside: "/app" }],
    command: "true",
    cwd: "/sandbox/repo",
    env: {},
    user: "user",
    network: false,
  };
  const args = bwrapArgs(spec);
  const triples = args.map((arg, i) => `${arg} ${args[i + 1]} ${args[i + 2]}`);
  assert.ok(triples.includes("--bind /s/extra/0 /tests"));
  assert.ok(triples.includes("--bind /s/repo /app"));
  assert.ok(triples.includes("--ro-bind /usr /usr"));
  assert.ok(!triples.includes("--ro-bind /app /app"), "the host's /app is hidden, not shown");
});

Deno.test("a local sandbox has its extra folders empty and writable, and its work tree at the alias", async () => {
  const root = await Deno.makeTempDir({ prefix: "sbx-extra-" });
  const repo = await makeRepo();
  const backend = new LocalBackend({ root });
  try {
    const spec: SandboxSpec = {
      repo: { kind: "path", path: repo.path, alias: "/app" },
      commit: repo.commits[2],
      network: false,
      lifetimeMs: 60_000,
      writableDirs: ["/tests", "/logs"],
    };
    const [a, b] = [await backend.create(spec), await backend.create(spec)];
    await a.writeFile("/tests/test.sh", "echo from-tests\n");
    const run = async (command: string) => {
      const result = await a.exec(command, { timeoutMs: 30_000 });
      assert.equal(result.exitCode, 0, result.stderr);
      return result.stdout;
    };
    assert.equal(await run("bash /tests/test.sh"), "from-tests\n");
    await run("mkdir -p /logs/verifier && echo 1 > /logs/verifier/reward.txt");
    assert.equal(new TextDecoder().decode(await a.readFile("/logs/verifier/reward.txt")), "1\n");
    // The alias is the work tree itself: a change through one is seen through the other.
    await run("echo changed > /app/new.txt");
    assert.equal(
      await run("cat /sandbox/repo/new.txt && ls -A /logs /tests"),
      "changed\n/logs:\nverifier\n\n/tests:\ntest.sh\n",
    );
    // Another sandbox's folders are its own, and empty.
    const other = await b.exec("ls -A /tests /logs; test -e /app/new.txt", { timeoutMs: 30_000 });
    assert.deepEqual([other.stdout, other.exitCode], ["/logs:\n\n/tests:\n", 1]);
    await Promise.all([a.kill(), b.kill()]);

    for (const bad of [{ writableDirs: ["/usr/tests"] }, { writableDirs: ["/tests", "/tests"] }]) {
      await assert.rejects(backend.create({ ...spec, ...bad }), RangeError);
    }
    await assert.rejects(
      backend.create({ ...spec, repo: { ...spec.repo, alias: "/etc/app" } }),
      /Extra sandbox path "\/etc" is the system's/,
    );
    assert.deepEqual(await Array.fromAsync(Deno.readDir(root)), [], "nothing left behind");
  } finally {
    await backend.close();
    await Deno.remove(root, { recursive: true });
    await Deno.remove(repo.path, { recursive: true });
  }
});
