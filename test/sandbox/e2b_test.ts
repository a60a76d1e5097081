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
      assert.equal(fake.runningProcesses(), 0);
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
