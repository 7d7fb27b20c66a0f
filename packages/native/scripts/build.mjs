#!/usr/bin/env node
/**
 * Builds the addon: `napi build --platform --release` (index.js, index.d.ts
 * and respbench.<platform>.node here, where the loader finds it first), then
 * copies the .node into its platform package under npm/ so that package can
 * be packed as the release workflow publishes it.
 *
 * It says what it is doing, because a first build is about a minute of an
 * otherwise silent `pnpm install`: one line before ("building the native
 * engine with cargo (about a minute)…") and one with the outcome (the time
 * taken, or that respbench will use its JS engine). cargo's own output is
 * shown live on a terminal; elsewhere (under turbo, in CI) it is kept and
 * shown only when the build fails. turbo.json gives this task full logs so
 * the two lines reach `pnpm install`'s output.
 *
 * Without cargo this prints one notice and exits 0: `pnpm install` must not
 * fail for want of Rust, and the CLI then runs its JS engine. Turbo does not
 * cache this task (turbo.json): its inputs are the crates outside this
 * package and the toolchain, and cargo is the cache that knows them.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

const say = (line) => console.log(`@respbench/native: ${line}`);

const cargo = spawnSync('cargo', ['--version'], { encoding: 'utf8' });
if (cargo.error || cargo.status !== 0) {
  say('cargo not found, the native engine is not built; respbench will use its JS engine.');
  process.exit(0);
}

say('building the native engine with cargo (about a minute)…');
const started = process.hrtime.bigint();
const live = Boolean(process.stderr.isTTY);
const build = spawnSync('napi', ['build', '--platform', '--release'], {
  cwd: here,
  stdio: live ? 'inherit' : ['ignore', 'pipe', 'pipe'],
  encoding: 'utf8',
  maxBuffer: 64 * 1024 * 1024,
  shell: process.platform === 'win32',
});
const seconds = (Number(process.hrtime.bigint() - started) / 1e9).toFixed(1);
if (build.error || build.status !== 0) {
  if (!live) process.stderr.write(`${build.stdout ?? ''}${build.stderr ?? ''}`);
  console.error(`@respbench/native: napi build failed after ${seconds} s${build.error ? `: ${build.error.message}` : ''}`);
  process.exit(build.status || 1);
}

// respbench.linux-x64-gnu.node stays here, where the generated loader looks
// first (the workspace does not install the platform packages), and a copy
// goes to npm/linux-x64-gnu/ so that platform package packs as published.
const built = [];
for (const file of readdirSync(here)) {
  const m = /^respbench\.(.+)\.node$/.exec(file);
  if (!m) continue;
  const dir = path.join(here, 'npm', m[1]);
  if (!existsSync(dir)) {
    console.error(`@respbench/native: built ${file} but there is no platform package npm/${m[1]} (napi.targets in package.json)`);
    process.exit(1);
  }
  copyFileSync(path.join(here, file), path.join(dir, file));
  built.push(file);
}
if (built.length === 0) {
  console.error('@respbench/native: napi build produced no .node file');
  process.exit(1);
}
say(`native engine built in ${seconds} s (${built.join(', ')})`);
