import assert from "node:assert/strict";
import {
  CONFIG_DECLARATIONS,
  CONFIG_TABLE_MARKERS,
  configTable,
  withConfigTable,
} from "../../lib/config/mod.ts";

const docs = new URL("../../docs/configuration.md", import.meta.url);

/** The cells of a markdown table row, with `\|` read back as `|`. */
function cells(row: string): string[] {
  return row.slice(1, -1).split(/(?<!\\)\|/).map((cell) => cell.trim().replaceAll("\\|", "|"));
}

Deno.test("docs/configuration.md holds configTable() between its markers, byte for byte", async () => {
  const markdown = await Deno.readTextFile(docs);
  const { start, end } = CONFIG_TABLE_MARKERS;
  assert.ok(markdown.includes(`${start}\n\n${configTable()}\n${end}`));
  assert.equal(withConfigTable(markdown), markdown, "run: deno run -A tools/config_table.ts");
});

Deno.test("configTable() has a row per declared variable with its default and meaning", () => {
  const [header, rule, ...rows] = configTable().trimEnd().split("\n");
  assert.deepEqual(cells(header), ["variable", "default", "meaning"]);
  assert.ok(cells(rule).every((cell) => /^-{3,}$/.test(cell)), rule);
  assert.deepEqual(
    rows.map(cells),
    CONFIG_DECLARATIONS.map(({ name, shown, meaning }) => [`\`${name}\``, shown, meaning]),
  );
});

Deno.test("configTable() is already as deno fmt formats it", async () => {
  const fmt = new Deno.Command(Deno.execPath(), {
    args: ["fmt", "--ext=md", "-"],
    stdin: "piped",
    stdout: "piped",
  }).spawn();
  const writer = fmt.stdin.getWriter();
  await writer.write(new TextEncoder().encode(configTable()));
  await writer.close();
  const { success, stdout } = await fmt.output();
  assert.ok(success);
  assert.equal(new TextDecoder().decode(stdout), configTable());
});

Deno.test("withConfigTable() refuses a page without the table's markers", () => {
  assert.throws(() => withConfigTable("# Configuration\n"), RangeError);
  const { start, end } = CONFIG_TABLE_MARKERS;
  assert.throws(() => withConfigTable(`${end}\n${start}\n`), RangeError);
});
