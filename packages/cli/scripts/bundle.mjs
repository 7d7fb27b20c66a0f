/**
 * Bundles the compiled modules (dist/, from tsc) into bundle/, the CLI's bin.
 * Every run is a new Node process, and what Node does before the first
 * request (resolve, read, parse and compile the program's modules) is a good
 * part of a short run's CPU (figures in docs/design.md). So the CLI is one
 * CommonJS file, bundle/cli.js, and bundle/bin.js (scripts/bin-loader.cjs)
 * runs it with a V8 code cache made here, bundle/cli.cache, by one run of
 * the CLI that ends at a unix socket nobody listens on (the start, the
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
  // "use strict" first: ahead of the banner's var it is still the directive, and the code stays as strict as the ES modules it was.
  banner: { js: "'use strict';\nvar __respbenchFileUrl = require('node:url').pathToFileURL(__filename).href;" },
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

// A unix socket that does not exist refuses at once, and nothing on the
// network is asked: the run goes through what every run does up to its first
// connection. No password of the builder's environment reaches the run.
const cache = path.join(out, 'cli.cache');
const env = { ...process.env, RESPBENCH_CODE_CACHE_OUT: cache };
for (const name of ['NODE_OPTIONS', 'REDISCLI_AUTH']) delete env[name];
const made = spawnSync(process.execPath, [bin, '-s', './no-server.sock', '-n', '1', '-q'], { cwd: out, env, encoding: 'utf8', timeout: 60_000 });
if (!existsSync(cache)) {
  const why = made.error ? made.error.message : `the CLI's run ended with ${made.status ?? made.signal}: ${(made.stderr ?? '').trim()}`;
  process.stderr.write(`bundle: no code cache made (${why}); bin.js compiles the source at each start\n`);
}
