#!/usr/bin/env node
/**
 * The release workflow's smoke test of one prebuilt binary: with the .node
 * next to packages/native/index.js (where the generated loader looks first),
 * `respbench --engine native --embedded` must run 20,000 requests on the
 * native engine against the demo server and report no failure. Plain Node, no
 * shell, so it runs the same on Linux (also in Alpine/Debian containers),
 * macOS and Windows. Needs the TypeScript packages built (pnpm build).
 *
 * Usage: node scripts/smoke-native.mjs
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const bin = path.join(repo, 'packages/cli/bundle/bin.js');
const where = `${process.platform}-${process.arch}, Node ${process.version}`;

const r = spawnSync(process.execPath, [bin, '--engine', 'native', '--embedded', '--requests', '20000', '--json', '-q'], {
  encoding: 'utf8',
  timeout: 120_000,
});
if (r.error || r.status !== 0) {
  console.error(`smoke (${where}): respbench exited ${r.status ?? r.error?.message}\n${r.stderr}`);
  process.exit(1);
}
let result;
try {
  result = JSON.parse(r.stdout);
} catch {
  console.error(`smoke (${where}): no JSON result\n${r.stdout}\n${r.stderr}`);
  process.exit(1);
}
if (result.engine !== 'native' || result.requests !== 20000 || result.failure !== null) {
  const { engine, requests, failure } = result;
  console.error(`smoke (${where}): unexpected result ${JSON.stringify({ engine, requests, failure })}`);
  process.exit(1);
}
console.log(`smoke (${where}): native engine, ${result.requests} requests, ${Math.round(result.opsPerSec)} ops/s`);
