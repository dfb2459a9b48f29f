// Builds the Profile tab into one output folder, deterministically.
//
//   node build.mjs OUTDIR
//
// Output (stable names, no hashes, no timestamps, no absolute paths):
//   index.js    the ES module TensorBoard imports; exports render()
//   index.css   the stylesheet (linked, never inline, so it passes a strict CSP)
//   index.html  the same app as a standalone page (copied from public/)
//   THIRD_PARTY_NOTICES.txt  license and notice texts of the npm packages bundled in index.js
//                (minified without comments, so their notices travel in this file)
//
// Only the files above are written; OUTDIR's other files are left alone, so
// scripts/build_frontend can also build into an empty temporary folder and compare.
import { build } from "esbuild";
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  statSync,
  writeFileSync,
} from "node:fs";
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
writeFileSync(join(out, "THIRD_PARTY_NOTICES.txt"), thirdPartyNotices(result.metafile));

const outputs = Object.entries(result.metafile.outputs)
  .map(([path, info]) => `${path.split("/").pop()} ${info.bytes} B`)
  .sort();
console.log(`built ${outputs.join(", ")} + index.html, THIRD_PARTY_NOTICES.txt`);

/** The bundled packages' license and notice files, one section per package, sorted by name. */
function thirdPartyNotices(metafile) {
  const packages = new Set();
  for (const output of Object.values(metafile.outputs)) {
    for (const input of Object.keys(output.inputs ?? {})) {
      const match = input.match(/node_modules\/((?:@[^/]+\/)?[^/]+)\//);
      if (match) packages.add(match[1]);
    }
  }
  // A package may ship a dist that already inlines its dependencies (@dagrejs/dagre inlines
  // @dagrejs/graphlib): their notices travel too.
  for (const name of [...packages]) {
    const meta = JSON.parse(readFileSync(join(here, "node_modules", name, "package.json"), "utf8"));
    for (const dep of Object.keys(meta.dependencies ?? {}))
      if (existsSync(join(here, "node_modules", dep, "package.json"))) packages.add(dep);
  }
  const sections = [...packages].sort().map((name) => {
    const dir = join(here, "node_modules", name);
    const meta = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
    const files = readdirSync(dir)
      .filter((file) => /^(licen[cs]e|notice|copyright)/i.test(file))
      .sort()
      .map((file) => join(dir, file))
      .filter((path) => statSync(path).isFile());
    if (existsSync(join(dir, "licenses")))
      for (const file of readdirSync(join(dir, "licenses")).sort())
        files.push(join(dir, "licenses", file));
    const texts = files.map((file) => readFileSync(file, "utf8").trim());
    return `== ${name} ${meta.version} (${meta.license}) ==\n\n${texts.join("\n\n")}\n`;
  });
  return (
    "Third-party software bundled in index.js (minified, comments removed), with its notices.\n\n" +
    sections.join("\n")
  );
}
