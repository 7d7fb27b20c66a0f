#!/usr/bin/env node
/**
 * The bin: runs bundle/cli.js, the whole CLI in one CommonJS file, compiled
 * with the V8 code cache scripts/bundle.mjs made at build time (cli.cache).
 * Each run is a new Node process and compiling the CLI's source is a good
 * part of its start-up CPU; Node 20 keeps no code cache for a module of its
 * own (that is Node 22's module.enableCompileCache), so the bin does here
 * what Node's loader would: wrap the source as a CommonJS module and run it.
 * V8 checks the cache against the source, its own version and its flags and
 * ignores one that does not fit (another Node, a flag on the line): the run
 * then compiles as it would without it. RESPBENCH_CODE_CACHE_OUT is the
 * build's: it names where to write the cache this run leaves.
 */
'use strict';
const { readFileSync, writeFileSync } = require('node:fs');
const Module = require('node:module');
const path = require('node:path');
const vm = require('node:vm');

const file = path.join(__dirname, 'cli.js');
let source;
let cachedData;
try {
  source = readFileSync(file, 'utf8');
  cachedData = readFileSync(path.join(__dirname, 'cli.cache'));
} catch (err) {
  // Out of file descriptors before the program could say so itself: its line (open-files.ts), not a stack trace.
  if (err.code === 'EMFILE' || err.code === 'ENFILE') {
    process.stderr.write(`respbench: too many open files (${err.code}): the open-file limit is too low for respbench; raise it (ulimit -n) or use fewer connections\n`);
    process.exit(1);
  }
  // No cache (a build that made none): compile the source.
  if (source === undefined) throw err;
}
const script = new vm.Script(Module.wrap(source), {
  filename: file,
  cachedData,
  importModuleDynamically: vm.constants?.USE_MAIN_CONTEXT_DEFAULT_LOADER,
});
const cacheOut = process.env.RESPBENCH_CODE_CACHE_OUT;
if (cacheOut) process.once('exit', () => writeFileSync(cacheOut, script.createCachedData()));
const cli = { exports: {}, filename: file, id: file };
script.runInThisContext().call(cli.exports, cli.exports, Module.createRequire(file), cli, file, __dirname);
