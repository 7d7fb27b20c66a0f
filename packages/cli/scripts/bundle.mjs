/**
 * Bundles the compiled modules (dist/, from tsc) into bundle/, the CLI's bin.
 * Every run is a new Node process, and what Node does before the first
 * request (resolve, read, parse and compile the program's modules) is a good
 * part of a short run's CPU (figures in docs/design.md). So the CLI is one
 * CommonJS file, bundle/cli.js, and bundle/bin.js (scripts/bin-loader.cjs)
 * runs it with a V8 code cache made here, bundle/cli.cache, by one run of
 * the CLI that ends at a server refusing the connection (the start, the
 * flags, the Plan, the engine's start and the error's path compiled).
 * A lazy import stays lazy in one file: esbuild wraps each module in an
 * initialiser named after it ("dist/merge.js"() { ... }) that runs only
 * when the import does (the start-up test watches those). What a path is
 * found from stays true: bin.js and merge-worker.js (the merge's worker
 * thread, a file of its own) keep their names one level below the package
 * as dist's own modules are (../package.json); import.meta.url is the
 * bundle file's URL. bundle/package.json makes its .js files CommonJS in an
 * ES-module package. The native addon and hdr-histogram-js are loaded with
 * require at run time, not bundled. bundle/meta.json says which dist
 * modules the bundle holds (the start-up test reads it); it is not packed.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const pkg = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const out = path.join(pkg, 'bundle');
rmSync(out, { recursive: true, force: true });
const result = await build({
  absWorkingDir: pkg,
  entryPoints: { cli: 'dist/bin.js', 'merge-worker': 'dist/merge-worker.js' },
  outdir: 'bundle',
  bundle: true,
  format: 'cjs',
  platform: 'node',
  target: 'node20',
  external: ['@respbench/native', 'hdr-histogram-js'],
  define: { 'import.meta.url': '__respbenchFileUrl' },
  banner: { js: "var __respbenchFileUrl = require('node:url').pathToFileURL(__filename).href;" },
  metafile: true,
  logLevel: 'warning',
});
writeFileSync(path.join(out, 'meta.json'), JSON.stringify(result.metafile));
// bin.js runs cli.js as a function's body, where dist/bin.js's #! line is not JavaScript.
const cli = path.join(out, 'cli.js');
writeFileSync(cli, readFileSync(cli, 'utf8').replace(/^#!/, '//'));
writeFileSync(path.join(out, 'package.json'), '{ "type": "commonjs" }\n');
const bin = path.join(out, 'bin.js');
copyFileSync(path.join(pkg, 'scripts', 'bin-loader.cjs'), bin);
chmodSync(bin, 0o755);

// Port 1 on loopback refuses at once: the run goes through what every run does up to its first connection.
const cache = path.join(out, 'cli.cache');
const env = { ...process.env, RESPBENCH_CODE_CACHE_OUT: cache };
delete env.NODE_OPTIONS;
const made = spawnSync(process.execPath, [bin, '-h', '127.0.0.1', '-p', '1', '-n', '1', '-q'], { env, encoding: 'utf8' });
if (!existsSync(cache)) {
  process.stderr.write(`bundle: no code cache made (the CLI's run ended with ${made.status ?? made.signal}: ${made.stderr.trim()}); bin.js compiles the source at each start\n`);
}
