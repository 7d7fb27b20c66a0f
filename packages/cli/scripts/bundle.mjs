/**
 * Bundles the compiled modules (dist/, from tsc) into bundle/, the CLI's bin:
 * every run is a new Node process, and Node resolving, reading and linking
 * the 65 module files a plain native run loads unbundled (30 bundled) is a
 * good part of its start-up CPU (figures in docs/design.md).
 * The bundle keeps the lazy imports lazy (code splitting: a subcommand's or
 * a flag's modules are their own chunks, loaded only when asked for) and
 * keeps what a path is found from beside it: bin.js and merge-worker.js (the
 * merge's worker thread) by those names, every chunk one level below the
 * package as dist's own modules are (../package.json). The native addon and
 * hdr-histogram-js are loaded with require at run time, not bundled.
 * bundle/meta.json says which dist modules each chunk holds (the start-up
 * test reads it); it is not packed.
 */
import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const pkg = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
rmSync(path.join(pkg, 'bundle'), { recursive: true, force: true });
const result = await build({
  absWorkingDir: pkg,
  entryPoints: { bin: 'dist/bin.js', 'merge-worker': 'dist/merge-worker.js' },
  outdir: 'bundle',
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  external: ['@respbench/native', 'hdr-histogram-js'],
  // The CommonJS packages bundled (commander) call require; an ES module has none of its own.
  banner: { js: "import { createRequire as __respbenchCreateRequire } from 'node:module'; const require = __respbenchCreateRequire(import.meta.url);" },
  metafile: true,
  logLevel: 'warning',
});
writeFileSync(path.join(pkg, 'bundle', 'meta.json'), JSON.stringify(result.metafile));
