// Builds the Profile tab into one output folder, deterministically.
//
//   node build.mjs OUTDIR
//
// Output (stable names, no hashes, no timestamps, no absolute paths):
//   index.js    the ES module TensorBoard imports; exports render()
//   index.css   the stylesheet (linked, never inline, so it passes a strict CSP)
//   index.html  the same app as a standalone page (copied from public/)
//
// Only the files above are written; OUTDIR's other files are left alone, so
// scripts/build_frontend can also build into an empty temporary folder and compare.
import { build } from "esbuild";
import { copyFileSync, mkdirSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const outdir = process.argv[2];
if (!outdir) {
  console.error("usage: node build.mjs OUTDIR");
  process.exit(2);
}
const out = resolve(outdir);
mkdirSync(out, { recursive: true });

const result = await build({
  absWorkingDir: here,
  entryPoints: { index: "src/index.tsx" },
  outdir: out,
  bundle: true,
  format: "esm",
  platform: "browser",
  target: ["es2020", "chrome100", "firefox100", "safari15"],
  minify: true,
  legalComments: "none",
  sourcemap: false,
  jsx: "automatic",
  jsxImportSource: "preact",
  define: { "process.env.NODE_ENV": '"production"' },
  logLevel: "warning",
  metafile: true,
  write: true,
});

copyFileSync(join(here, "public", "index.html"), join(out, "index.html"));

const outputs = Object.entries(result.metafile.outputs)
  .map(([path, info]) => `${path.split("/").pop()} ${info.bytes} B`)
  .sort();
console.log(`built ${outputs.join(", ")} + index.html`);
