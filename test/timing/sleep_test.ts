import assert from "node:assert/strict";
import { sleep } from "../../lib/timing/mod.ts";

Deno.test("sleep() resolves after its time, and rejects with the reason of an abort", async () => {
  await sleep(0);
  const controller = new AbortController();
  const waiting = sleep(60_000, controller.signal);
  controller.abort(new Error("client left"));
  await assert.rejects(waiting, { message: "client left" });
  await assert.rejects(
    sleep(60_000, controller.signal),
    { message: "client left" },
    "aborted already",
  );
});
