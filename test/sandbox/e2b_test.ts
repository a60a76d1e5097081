/**
 * The E2B backend with the real `e2b` SDK against the offline fake of E2B's cloud
 * (fixtures/fake_e2b.ts): boots retried with backoff, the repository brought in as a bundle,
 * commands killed at their timeout, sandboxes killed afterwards.
 */
import assert from "node:assert/strict";
import { type FakeE2b, startFakeE2b } from "../../fixtures/fake_e2b.ts";
import {
  E2bBackend,
  type E2bBackendOptions,
  RepoError,
  type SandboxSpec,
  SandboxUnavailableError,
} from "../../lib/sandbox/mod.ts";
import { makeRepo, type TestRepo } from "../_git_repo.ts";
import { waitFor } from "../_host.ts";

async function withFake(
  fakeOptions: Parameters<typeof startFakeE2b>[0],
  fn: (fake: FakeE2b, backend: E2bBackend, repo: TestRepo) => Promise<void>,
  backendOptions: Partial<E2bBackendOptions> = {},
): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "rg-e2b-" });
  const repo = await makeRepo();
  const fake = await startFakeE2b(fakeOptions);
  const backend = new E2bBackend({
    ...fake.connection,
    template: "base",
    bootAttempts: 3,
    bootBackoffMs: 1,
    scratchDir: `${dir}/bundles`,
    ...backendOptions,
  });
  try {
    await fn(fake, backend, repo);
    assert.deepEqual([...Deno.readDirSync(`${dir}/bundles`)], [], "bundles are removed");
  } finally {
    await backend.close();
    await fake.close();
    await Deno.remove(dir, { recursive: true });
    await Deno.remove(repo.path, { recursive: true });
  }
}

function spec(overrides: Partial<SandboxSpec> & Pick<SandboxSpec, "repo" | "commit">): SandboxSpec {
  return { network: false, lifetimeMs: 120_000, ...overrides };
}

Deno.test("E2bBackend boots a sandbox with the repository at its commit, brought in as a bundle", async () => {
  await withFake({}, async (fake, backend, repo) => {
    const sandbox = await backend.create(spec({
      repo: { kind: "path", path: repo.path },
      commit: repo.commits[0].slice(0, 8),
      template: "swe-python",
      metadata: { task: "t1" },
    }));
    assert.equal(sandbox.backend, "e2b");
    const created = fake.creates[0] as Record<string, unknown>;
    assert.deepEqual(
      [created.templateID, created.metadata, created.allow_internet_access, created.timeout],
      ["swe-python", { task: "t1" }, false, 120],
    );
    const state = await sandbox.exec("cat a.txt; git rev-parse HEAD; git status --porcelain; pwd", {
      timeoutMs: 30_000,
    });
    assert.deepEqual(state.stdout.split("\n"), ["one", repo.commits[0], sandbox.workdir, ""]);
    assert.equal(state.exitCode, 0);
    await sandbox.kill();
    assert.deepEqual(fake.live(), []);
  });
});

Deno.test("E2bBackend runs commands with cwd, env and exit codes, and moves files both ways", async () => {
  await withFake({}, async (_fake, backend, repo) => {
    const sandbox = await backend.create(
      spec({ repo: { kind: "path", path: repo.path }, commit: "HEAD" }),
    );
    try {
      const env = await sandbox.exec('echo "$GREETING" from "$(pwd)"; echo oops >&2; exit 4', {
        timeoutMs: 30_000,
        cwd: sandbox.tmpdir,
        env: { GREETING: "hello" },
      });
      assert.deepEqual(
        [env.exitCode, env.stdout, env.stderr, env.timedOut],
        [4, `hello from ${sandbox.tmpdir}\n`, "oops\n", false],
      );
      await sandbox.writeFile(`${sandbox.tmpdir}/sub/in.txt`, "from the host\n");
      const seen = await sandbox.exec(`cat sub/in.txt; printf made > out.bin`, {
        timeoutMs: 30_000,
        cwd: sandbox.tmpdir,
      });
      assert.equal(seen.stdout, "from the host\n");
      assert.equal(
        new TextDecoder().decode(await sandbox.readFile(`${sandbox.tmpdir}/out.bin`)),
        "made",
      );
    } finally {
      await sandbox.kill();
    }
  });
});

Deno.test("E2bBackend kills a command at its timeout, with the processes it started", async () => {
  await withFake({}, async (fake, backend, repo) => {
    const sandbox = await backend.create(
      spec({ repo: { kind: "path", path: repo.path }, commit: "HEAD" }),
    );
    try {
      const result = await sandbox.exec("sleep 1000 & sleep 1000", { timeoutMs: 300 });
      assert.deepEqual([result.exitCode, result.timedOut], [null, true]);
      await fake.idle();
      // The kill reaches every process of the command's session; the kernel reaps them a moment
      // later on a loaded machine.
      await waitFor(() => Promise.resolve(fake.runningProcesses() === 0), "its processes gone");
    } finally {
      await sandbox.kill();
    }
  });
});

Deno.test("E2bBackend resets a checkout already in the image", async () => {
  await withFake({}, async (_fake, backend, repo) => {
    await Deno.writeTextFile(`${repo.path}/stray.txt`, "left over\n");
    const sandbox = await backend.create(
      spec({ repo: { kind: "image", dir: repo.path }, commit: repo.commits[0] }),
    );
    try {
      assert.equal(sandbox.workdir, repo.path);
      const state = await sandbox.exec("cat a.txt; git status --porcelain --ignored", {
        timeoutMs: 30_000,
      });
      assert.equal(state.stdout, "one\n");
    } finally {
      await sandbox.kill();
    }
  });
});

Deno.test("E2bBackend retries a refused boot with backoff, then gives up naming the attempts", async () => {
  await withFake({ failCreates: 2 }, async (fake, backend, repo) => {
    const sandbox = await backend.create(
      spec({ repo: { kind: "path", path: repo.path }, commit: "HEAD" }),
    );
    await sandbox.kill();
    assert.equal(fake.creates.length, 3);
  });
  await withFake({ failCreates: 5 }, async (fake, backend, repo) => {
    await assert.rejects(
      backend.create(spec({ repo: { kind: "path", path: repo.path }, commit: "HEAD" })),
      (error: Error) => {
        assert.ok(error instanceof SandboxUnavailableError);
        assert.match(error.message, /^E2B could not boot a sandbox after 2 attempts: /);
        return true;
      },
    );
    assert.equal(fake.creates.length, 2);
    assert.deepEqual(fake.live(), []);
  }, { bootAttempts: 2 });
});

Deno.test("E2bBackend does not retry a refused API key, and boots nothing for a bad commit", async () => {
  await withFake({}, async (fake, backend, repo) => {
    await assert.rejects(
      backend.create(spec({ repo: { kind: "path", path: repo.path }, commit: "HEAD" })),
      (error: Error) => {
        assert.ok(error instanceof SandboxUnavailableError);
        assert.match(error.message, /^E2B refused the API key: /);
        return true;
      },
    );
    assert.equal(fake.creates.length, 1);
  }, { apiKey: `e2b_${"1".repeat(40)}` });
  await withFake({}, async (fake, backend, repo) => {
    await assert.rejects(
      backend.create(spec({ repo: { kind: "path", path: repo.path }, commit: "feedbeef" })),
      (error: Error) => {
        assert.ok(error instanceof RepoError);
        assert.match(error.message, /^Commit "feedbeef" not found in /);
        return true;
      },
    );
    assert.equal(fake.creates.length, 0);
  });
});

Deno.test("E2bBackend reports a sandbox that died under it as unavailable, not as a test failure", async () => {
  await withFake({}, async (fake, backend, repo) => {
    const sandbox = await backend.create(
      spec({ repo: { kind: "path", path: repo.path }, commit: "HEAD" }),
    );
    try {
      // Killed behind the backend's back, as E2B does when a sandbox's lifetime runs out.
      const killed = await fetch(`${fake.url}/sandboxes/${sandbox.id}`, {
        method: "DELETE",
        headers: { "x-api-key": fake.connection.apiKey },
      });
      await killed.body?.cancel();
      assert.equal(killed.status, 204);
      await assert.rejects(sandbox.exec("true", { timeoutMs: 30_000 }), (error: Error) => {
        assert.ok(error instanceof SandboxUnavailableError, String(error));
        assert.match(error.message, new RegExp(`^E2B sandbox ${sandbox.id} failed: `));
        return true;
      });
    } finally {
      await sandbox.kill();
    }
  });
});

Deno.test("E2bBackend makes folders read-only to a root command and all it starts, which cannot undo it, and writable again after", async () => {
  await withFake({}, async (_fake, backend, repo) => {
    const sandbox = await backend.create(
      spec({ repo: { kind: "path", path: repo.path }, commit: "HEAD" }),
    );
    try {
      const tests = `${sandbox.tmpdir}/tests`;
      await sandbox.writeFile(`${tests}/test.sh`, "echo graded\n");
      // What code under test would try, as root: write, remount, unmount, go through another
      // process's view of the file system, and from a child it started.
      const attack = [
        `echo cheat > ${tests}/test.sh || echo "write refused"`,
        `mount -o remount,rw ${tests} 2>/dev/null || echo "remount refused"`,
        `umount ${tests} 2>/dev/null || echo "umount refused"`,
        `echo cheat > /proc/1/root${tests}/test.sh 2>/dev/null || echo "proc root refused"`,
        `sh -c 'echo cheat > ${tests}/test.sh' 2>/dev/null || echo "child refused"`,
        `echo fine > ${sandbox.tmpdir}/elsewhere.txt && echo "elsewhere written"`,
        `bash ${tests}/test.sh`,
      ].join("\n");
      const result = await sandbox.exec(attack, {
        timeoutMs: 30_000,
        user: "root",
        readOnly: [tests],
      });
      assert.deepEqual(result.stdout.split("\n"), [
        "write refused",
        "remount refused",
        "umount refused",
        "proc root refused",
        "child refused",
        "elsewhere written",
        "graded",
        "",
      ]);
      assert.equal(
        new TextDecoder().decode(await sandbox.readFile(`${tests}/test.sh`)),
        "echo graded\n",
      );
      // The read-only view ends with the command.
      const after = await sandbox.exec(`echo later > ${tests}/test.sh && cat ${tests}/test.sh`, {
        timeoutMs: 30_000,
        user: "root",
      });
      assert.deepEqual([after.exitCode, after.stdout], [0, "later\n"]);
      // A folder that cannot be made read-only fails the call: the command never ran.
      await assert.rejects(
        sandbox.exec("echo ran", {
          timeoutMs: 30_000,
          user: "root",
          readOnly: [`${sandbox.tmpdir}/missing`],
        }),
        (error: Error) =>
          error instanceof RepoError && /cannot make read-only: .*\/missing$/.test(error.message),
      );
      await assert.rejects(
        sandbox.exec("echo ran", { timeoutMs: 30_000, readOnly: [tests] }),
        /only for commands run as root/,
      );
    } finally {
      await sandbox.kill();
    }
  });
});
