import assert from "node:assert/strict";
import { type Mount, resolveInside } from "../../lib/sandbox/paths.ts";

/**
 * A sandbox's three host folders (`repo` holding `a.txt` and `src/main.py`) and, beside them, an
 * `outside` folder holding `secret.txt`, in a new temp folder that `run` removes afterwards.
 */
async function withMounts(
  run: (mounts: readonly Mount[], host: { root: string; outside: string }) => Promise<void>,
): Promise<void> {
  const root = await Deno.realPath(await Deno.makeTempDir({ prefix: "sbx-paths-" }));
  try {
    for (const dir of ["repo/src", "home", "tmp", "outside"]) {
      await Deno.mkdir(`${root}/${dir}`, { recursive: true });
    }
    await Deno.writeTextFile(`${root}/repo/a.txt`, "a");
    await Deno.writeTextFile(`${root}/repo/src/main.py`, "main");
    await Deno.writeTextFile(`${root}/outside/secret.txt`, "secret");
    const mounts: Mount[] = [
      { inside: "/sandbox/repo", host: `${root}/repo` },
      { inside: "/sandbox/home", host: `${root}/home` },
      { inside: "/tmp", host: `${root}/tmp` },
    ];
    await run(mounts, { root, outside: `${root}/outside` });
  } finally {
    await Deno.remove(root, { recursive: true });
  }
}

const escapes = { name: "RangeError", message: /escapes its folder/ };

Deno.test("resolveInside() maps a path under each mount to the same path under its host folder", async () => {
  await withMounts(async (mounts, { root }) => {
    const paths = [
      "/sandbox/repo/a.txt",
      "/sandbox/repo/src/main.py",
      "/sandbox/repo/new.txt",
      "/sandbox/home/.bashrc",
      "/tmp/out.log",
      "/sandbox/repo/./src//main.py",
      "/sandbox/repo/src/../a.txt",
    ];
    const resolved = [];
    for (const path of paths) resolved.push(await resolveInside(path, mounts, { create: false }));
    assert.deepEqual(resolved, [
      `${root}/repo/a.txt`,
      `${root}/repo/src/main.py`,
      `${root}/repo/new.txt`,
      `${root}/home/.bashrc`,
      `${root}/tmp/out.log`,
      `${root}/repo/src/main.py`,
      `${root}/repo/a.txt`,
    ]);
  });
});

Deno.test("resolveInside() refuses a path whose .. leaves its mount", async () => {
  await withMounts(async (mounts) => {
    for (const path of ["/sandbox/repo/../../etc/passwd", "/tmp/../etc/passwd", "/tmp/a/../../x"]) {
      await assert.rejects(
        resolveInside(path, mounts, { create: true }),
        { name: "RangeError", message: /outside the sandbox's folders/ },
        path,
      );
    }
  });
});

Deno.test("resolveInside() refuses a planted symlink to outside used as a parent folder", async () => {
  await withMounts(async (mounts, { root }) => {
    await Deno.symlink("/etc", `${root}/repo/etc`);
    await Deno.symlink("../outside", `${root}/repo/up`);
    for (const create of [false, true]) {
      await assert.rejects(resolveInside("/sandbox/repo/etc/passwd", mounts, { create }), escapes);
      await assert.rejects(
        resolveInside("/sandbox/repo/up/secret.txt", mounts, { create }),
        escapes,
      );
      await assert.rejects(resolveInside("/sandbox/repo/up/new/x", mounts, { create }), escapes);
    }
    assert.deepEqual([...Deno.readDirSync(`${root}/outside`)].map((e) => e.name), ["secret.txt"]);
  });
});

Deno.test("resolveInside() refuses a planted symlink to outside as the final component", async () => {
  await withMounts(async (mounts, { root, outside }) => {
    await Deno.symlink("/etc/passwd", `${root}/repo/passwd`);
    await Deno.symlink(`${outside}/secret.txt`, `${root}/tmp/secret`);
    await Deno.symlink("/etc", `${root}/home/etc`);
    for (const create of [false, true]) {
      await assert.rejects(resolveInside("/sandbox/repo/passwd", mounts, { create }), escapes);
      await assert.rejects(resolveInside("/tmp/secret", mounts, { create }), escapes);
      await assert.rejects(resolveInside("/sandbox/home/etc", mounts, { create }), escapes);
    }
  });
});

Deno.test("resolveInside() follows a symlink that stays within its mount", async () => {
  await withMounts(async (mounts, { root }) => {
    await Deno.symlink("src", `${root}/repo/source`);
    await Deno.symlink("src/main.py", `${root}/repo/main`);
    assert.deepEqual(
      [
        await resolveInside("/sandbox/repo/source/main.py", mounts, { create: false }),
        await resolveInside("/sandbox/repo/main", mounts, { create: false }),
      ],
      [`${root}/repo/src/main.py`, `${root}/repo/src/main.py`],
    );
  });
});

Deno.test("resolveInside() with create makes missing parent folders, without it refuses them", async () => {
  await withMounts(async (mounts, { root }) => {
    await assert.rejects(
      resolveInside("/tmp/a/b/c.txt", mounts, { create: false }),
      Deno.errors.NotFound,
    );
    assert.deepEqual([...Deno.readDirSync(`${root}/tmp`)], []);
    const host = await resolveInside("/tmp/a/b/c.txt", mounts, { create: true });
    assert.equal(host, `${root}/tmp/a/b/c.txt`);
    assert.equal((await Deno.stat(`${root}/tmp/a/b`)).isDirectory, true);
    await assert.rejects(Deno.stat(host), Deno.errors.NotFound, "the file itself is not made");
  });
});

Deno.test("resolveInside() refuses a relative path", async () => {
  await withMounts(async (mounts) => {
    for (const path of ["a.txt", "sandbox/repo/a.txt", "./tmp/x", ""]) {
      await assert.rejects(
        resolveInside(path, mounts, { create: true }),
        { name: "RangeError", message: /is not absolute/ },
        path,
      );
    }
  });
});

Deno.test("resolveInside() refuses a path outside every mount, or a mount itself", async () => {
  await withMounts(async (mounts) => {
    const outside = ["/etc/passwd", "/sandbox/repository/a.txt", "/tmpfile", "/sandbox", "/"];
    for (const path of outside) {
      await assert.rejects(
        resolveInside(path, mounts, { create: true }),
        { name: "RangeError", message: /outside the sandbox's folders/ },
        path,
      );
    }
    for (const path of ["/tmp", "/sandbox/repo/", "/sandbox/home/."]) {
      await assert.rejects(
        resolveInside(path, mounts, { create: true }),
        { name: "RangeError", message: /is a folder/ },
        path,
      );
    }
  });
});

Deno.test("resolveInside() refuses a file used as a folder", async () => {
  await withMounts(async (mounts) => {
    await assert.rejects(
      resolveInside("/sandbox/repo/a.txt/b", mounts, { create: true }),
      { name: "RangeError", message: /"a.txt" is not a folder/ },
    );
  });
});
