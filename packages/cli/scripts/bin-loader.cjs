#!/usr/bin/env node
/**
 * The bin: runs bundle/cli.js, the whole CLI in one CommonJS file, compiled
 * with the V8 code cache scripts/bundle.mjs made at build time (cli.cache).
 * Each run is a new Node process and compiling the CLI's source is a good
 * part of its start-up CPU; Node 20 keeps no code cache for a module of its
 * own (that is Node 22's module.enableCompileCache), so the bin does here
 * what Node's loader would: wrap the source as a CommonJS module and run it.
 * The cache file is the SHA-256 of the cli.js it was made from, then V8's
 * data: V8 checks its data against its own version, its flags and the
 * source's length only, so an edited cli.js (a patch, a debugging session)
 * would otherwise run the code the cache was made from. A cache that does
 * not fit is ignored and the run compiles as it would without one.
 * RESPBENCH_CODE_CACHE_OUT is the build's: it names where to write the
 * cache this run leaves.
 */
'use strict';
const { createHash } = require('node:crypto');
const { readFileSync, writeFileSync } = require('node:fs');
const Module = require('node:module');
const path = require('node:path');
const vm = require('node:vm');

const file = path.join(__dirname, 'cli.js');
let bytes;
let cache;
try {
  bytes = readFileSync(file);
  cache = readFileSync(path.join(__dirname, 'cli.cache'));
} catch (err) {
  // Out of file descriptors before the program could say so itself: its line (open-files.ts), not a stack trace.
  if (err.code === 'EMFILE' || err.code === 'ENFILE') {
    process.stderr.write(`respbench: too many open files (${err.code}): the open-file limit is too low for respbench; raise it (ulimit -n) or use fewer connections\n`);
    process.exit(1);
  }
  // No cache (a build that made none): compile the source.
  if (bytes === undefined) throw err;
}
const digest = createHash('sha256').update(bytes).digest();
const script = new vm.Script(Module.wrap(bytes.toString('utf8')), {
  filename: file,
  cachedData: cache && digest.equals(cache.subarray(0, digest.length)) ? cache.subarray(digest.length) : undefined,
  importModuleDynamically: vm.constants?.USE_MAIN_CONTEXT_DEFAULT_LOADER,
});
const cacheOut = process.env.RESPBENCH_CODE_CACHE_OUT;
if (cacheOut) process.once('exit', () => writeFileSync(cacheOut, Buffer.concat([digest, script.createCachedData()])));
const cli = { exports: {}, filename: file, id: file };
script.runInThisContext().call(cli.exports, cli.exports, Module.createRequire(file), cli, file, __dirname);
