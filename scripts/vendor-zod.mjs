// A step of the build (scripts/build.mjs): zod in dist/ instead of in the user's install.
// Spillway's sources import `zod/mini` (and `zod/v4/core`, for types only). zod's package is
// 8 MB installed (classic, mini, v3, locales, sources); Spillway runs about 60 KB of it. So the
// modules tsc wrote get that part as one ESM file, dist/vendor/zod.js, bundled by esbuild from
// the zod devDependency with its MIT license beside it, and zod is no dependency of the package.
//
// The file exports only the names dist's modules use. `export * from "zod/mini"` would carry
// zod's namespaces (locales, core, …) as objects built at load time, which no bundler can drop:
// the Worker went from 69 to 151 KiB gzip. With the names alone, what zod marks pure is all
// that is left, and wrangler drops what the Worker does not use, as it did from zod's package.
import { copyFileSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, relative, sep } from "node:path";

const require = createRequire(import.meta.url);
/** How tsc writes the sources' `import * as z from "zod/mini"`. */
const NAMESPACE_IMPORT = /^import \* as ([A-Za-z_$][\w$]*) from "zod\/mini";$/gm;
/** Any import of zod's package (a subpath, either quote, static or dynamic): none may be left in dist/. */
const ANY_ZOD = /(?:\bfrom\s*|\bimport\s*\(?\s*)["']zod(?:\/[^"']*)?["']/;

/** Every file under `dir` whose name ends with one of `suffixes`. */
function filesUnder(dir, suffixes) {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && suffixes.some((suffix) => entry.name.endsWith(suffix)))
    .map((entry) => join(entry.parentPath, entry.name));
}

/**
 * Bundles what dist's modules use of zod/mini into `${dist}/vendor/zod.js`, points their
 * `from "zod/mini"` at it, and refuses a dist/ whose JavaScript or declarations still import
 * zod's package. Answers the names vendored.
 */
export async function vendorZod(root, dist) {
  const esbuild = await import(require.resolve("esbuild"));
  const zodPackage = dirname(require.resolve("zod/package.json"));
  const { version } = JSON.parse(readFileSync(join(zodPackage, "package.json"), "utf8"));
  const zodMini = await import(require.resolve("zod/mini"));
  const vendor = join(dist, "vendor");
  const vendored = join(vendor, "zod.js");

  // The names: every `z.name` of a module that imports zod/mini as `z`, read with its comments
  // stripped, kept when zod/mini exports it (a `z.` in a string then costs at most one export).
  const importers = [];
  const names = new Set();
  for (const file of filesUnder(dist, [".js"])) {
    const text = readFileSync(file, "utf8");
    const aliases = [...text.matchAll(NAMESPACE_IMPORT)].map((match) => match[1]);
    if (aliases.length === 0) continue;
    importers.push(file);
    const { code } = await esbuild.transform(text, { format: "esm", legalComments: "none", logLevel: "error" });
    for (const alias of aliases) {
      for (const match of code.matchAll(new RegExp(`(?<![\\w$.])${alias.replace(/\$/g, "\\$")}\\.([A-Za-z_$][\\w$]*)`, "g"))) {
        if (Object.hasOwn(zodMini, match[1])) names.add(match[1]);
      }
    }
  }
  if (importers.length === 0) throw new Error("vendor-zod: no dist module imports zod/mini; is this step still needed?");

  mkdirSync(vendor, { recursive: true });
  await esbuild.build({
    stdin: { contents: `export { ${[...names].sort().join(", ")} } from "zod/mini";\n`, resolveDir: root, sourcefile: "zod-mini.js" },
    bundle: true,
    format: "esm",
    platform: "neutral",
    mainFields: ["module", "main"],
    target: "es2023",
    outfile: vendored,
    legalComments: "inline",
    banner: { js: `// zod ${version} (what Spillway uses of zod/mini), bundled from npm's zod by Spillway's build. MIT License: ./zod.LICENSE` },
    logLevel: "error",
  });
  copyFileSync(join(zodPackage, "LICENSE"), join(vendor, "zod.LICENSE"));

  for (const file of importers) {
    let specifier = relative(dirname(file), vendored).split(sep).join("/");
    if (!specifier.startsWith(".")) specifier = `./${specifier}`;
    writeFileSync(file, readFileSync(file, "utf8").replace(NAMESPACE_IMPORT, (_line, alias) => `import * as ${alias} from ${JSON.stringify(specifier)};`));
  }
  const leftovers = filesUnder(dist, [".js", ".d.ts"]).filter((file) => file !== vendored && ANY_ZOD.test(readFileSync(file, "utf8")));
  if (leftovers.length > 0) {
    throw new Error(`vendor-zod: these still import zod's package, which users do not install:\n  ${leftovers.map((file) => relative(root, file)).join("\n  ")}`);
  }
  return [...names].sort();
}
