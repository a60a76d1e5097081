/**
 * Writes the table of variables in docs/configuration.md from the configuration schema.
 *
 *     deno run -A tools/config_table.ts          # rewrite the table
 *     deno run -A tools/config_table.ts --check  # exit 1 when the file's table is stale
 *
 * @module
 */
import { withConfigTable } from "../lib/config/mod.ts";

const path = new URL("../docs/configuration.md", import.meta.url);
const markdown = await Deno.readTextFile(path);
const updated = withConfigTable(markdown);
if (Deno.args.includes("--check")) {
  if (updated !== markdown) {
    console.error(
      "docs/configuration.md: the table differs from the schema; run tools/config_table.ts",
    );
    Deno.exit(1);
  }
} else if (updated !== markdown) {
  await Deno.writeTextFile(path, updated);
  console.log("docs/configuration.md: table written");
}
