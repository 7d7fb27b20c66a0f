#!/usr/bin/env node
/**
 * Builds the addon: `napi build --platform --release` (index.js, index.d.ts
 * and respbench.<platform>.node here), then moves the .node into its
 * platform package under npm/, where the loader finds it as it would after
 * `npm install`.
 *
 * Without cargo this prints one notice and exits 0: `pnpm install` must not
 * fail for want of Rust, and the CLI then runs its JS engine. Turbo does not
 * cache this task (turbo.json): its inputs are the crates outside this
 * package and the toolchain, and cargo is the cache that knows them.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, renameSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

const cargo = spawnSync('cargo', ['--version'], { encoding: 'utf8' });
if (cargo.error || cargo.status !== 0) {
  console.log('@respbench/native: cargo not found, the native engine is not built; respbench will use its JS engine.');
  process.exit(0);
}

const build = spawnSync('napi', ['build', '--platform', '--release'], { cwd: here, stdio: 'inherit', shell: false });
if (build.error || build.status !== 0) {
  console.error(`@respbench/native: napi build failed${build.error ? `: ${build.error.message}` : ''}`);
  process.exit(build.status || 1);
}

// respbench.linux-x64-gnu.node -> npm/linux-x64-gnu/
let moved = 0;
for (const file of readdirSync(here)) {
  const m = /^respbench\.(.+)\.node$/.exec(file);
  if (!m) continue;
  const dir = path.join(here, 'npm', m[1]);
  if (!existsSync(dir)) {
    console.error(`@respbench/native: built ${file} but there is no platform package npm/${m[1]}`);
    process.exit(1);
  }
  rmSync(path.join(dir, file), { force: true });
  renameSync(path.join(here, file), path.join(dir, file));
  moved++;
}
if (moved === 0) {
  console.error('@respbench/native: napi build produced no .node file');
  process.exit(1);
}
