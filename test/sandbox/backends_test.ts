/** The registered sandbox backends: which the configuration makes, and what each says it can do. */
import assert from "node:assert/strict";
import { resolveConfig } from "../../lib/config/mod.ts";
import {
  E2bBackend,
  LocalBackend,
  SANDBOX_BACKEND_KINDS,
  sandboxBackendKind,
  sandboxBackends,
} from "../../lib/sandbox/mod.ts";

Deno.test("the configuration makes local always and E2B with its key, each saying what it can do", async () => {
  const context = { hidden: [] };
  assert.deepEqual(SANDBOX_BACKEND_KINDS.map((kind) => kind.name), ["local", "e2b"]);
  const plain = resolveConfig({ SANDBOX_ROOT: "/tmp/rg-backends-test" });
  assert.deepEqual([...sandboxBackends(plain, context).keys()], ["local"]);
  assert.equal(sandboxBackendKind("e2b")?.unavailable(plain), "e2b needs E2B_API_KEY");
  assert.equal(sandboxBackendKind("docker"), undefined);

  const withKey = resolveConfig({ SANDBOX_ROOT: "/tmp/rg-backends-test", E2B_API_KEY: "e2b_x" });
  const backends = sandboxBackends(withKey, context);
  assert.deepEqual([...backends.keys()], ["local", "e2b"]);
  const local = backends.get("local")!;
  const e2b = backends.get("e2b")!;
  assert.ok(local instanceof LocalBackend);
  assert.ok(e2b instanceof E2bBackend);
  assert.equal(backends.get("e2b")?.location, undefined);
  assert.deepEqual(local.capabilities, {
    placement: "host",
    runsImages: false,
    agentInstall: "lent",
    gatewayReach: "forward",
  });
  assert.equal(local.location, "/tmp/rg-backends-test/sandboxes");
  assert.deepEqual(e2b.capabilities, {
    placement: "remote",
    runsImages: true,
    agentInstall: "install",
    gatewayReach: "network",
  });
  for (const backend of backends.values()) await backend.close();
});
