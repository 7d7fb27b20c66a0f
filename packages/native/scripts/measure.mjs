#!/usr/bin/env node
/**
 * The native engine against redis-benchmark on one redis-server: pipeline
 * 128, one connection, 32-byte values, SET then GET, ROUNDS rounds with the
 * order alternating, medians. Client CPU is user and sys of the whole client
 * process (/usr/bin/time) divided by the requests; for respbench that
 * includes starting Node, so a 1-request run is measured too and shown as the
 * fixed cost.
 *
 *   node packages/native/scripts/measure.mjs            # N=5000000 K=1000000 ROUNDS=3
 *   N=2000000 K=100000 node packages/native/scripts/measure.mjs
 *
 * Prints a Markdown table. Figures only: nothing passes or fails here.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const CLI = path.join(repo, 'packages', 'cli', 'dist', 'bin.js');
const N = Number(process.env.N ?? 5_000_000);
const K = Number(process.env.K ?? 1_000_000);
const ROUNDS = Number(process.env.ROUNDS ?? 3);

/** Runs argv under /usr/bin/time; returns stdout and user/sys seconds. */
function timed(argv) {
  const r = spawnSync('/usr/bin/time', ['-f', 'CPU %U %S', ...argv], { encoding: 'utf8', maxBuffer: 64 << 20 });
  const m = /CPU ([\d.]+) ([\d.]+)\s*$/.exec(r.stderr);
  if (!m) throw new Error(`${argv.join(' ')}: no timing (exit ${r.status}): ${r.stderr.slice(-500)}`);
  return { out: r.stdout, user: Number(m[1]), sys: Number(m[2]) };
}

function redisBenchmark(port, test) {
  const r = timed(['redis-benchmark', '-p', String(port), '-P', '128', '-c', '1', '-n', String(N), '-r', String(K), '-d', '32', '-t', test, '--csv']);
  const line = r.out.split('\n').find((l) => l.startsWith(`"${test.toUpperCase()}"`));
  return { ops: Number(line.split(',')[1].replace(/"/g, '')), user: r.user, sys: r.sys };
}

function native(port, test, requests = N) {
  const args = [process.execPath, CLI, '--engine', 'native', '--port', String(port), '--mode', test, '-n', String(requests), '-P', '128', '-c', '1', '-r', String(K), '-d', '32', '--seed', '1', '--json', '-q'];
  if (test === 'get') args.push('--no-preload');
  const r = timed(args);
  const result = JSON.parse(r.out);
  if (result.engine !== 'native' || result.failure) throw new Error(`native run: ${JSON.stringify(result.failure)} (engine ${result.engine})`);
  return { ops: result.opsPerSec, user: r.user, sys: r.sys };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const port = await new Promise((resolve) => {
  const s = net.createServer().listen(0, '127.0.0.1', () => {
    const { port: free } = s.address();
    s.close(() => resolve(free));
  });
});
const dir = mkdtempSync(path.join(tmpdir(), 'respbench-measure-'));
const server = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
try {
  for (let i = 0; i < 100 && spawnSync('redis-cli', ['-p', String(port), 'ping']).stdout?.toString().trim() !== 'PONG'; i++) await new Promise((r) => setTimeout(r, 50));
  const fixed = native(port, 'set', 1);
  console.log(`redis-server ${spawnSync('redis-server', ['--version']).stdout.toString().match(/v=\S+/)[0]} on 127.0.0.1:${port}; ${N} requests, -P 128 -c 1 -r ${K} -d 32; ${ROUNDS} rounds alternating, medians`);
  console.log(`respbench fixed cost (node start, load, a 1-request run): ${((fixed.user + fixed.sys) * 1000).toFixed(0)} ms CPU\n`);
  console.log('| test | client | ops/s | user us/op | sys us/op | CPU us/op | ops ratio | CPU ratio |');
  console.log('|---|---|---:|---:|---:|---:|---:|---:|');
  for (const test of ['set', 'get']) {
    const s = { rb: [], native: [] };
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 === 0 ? ['rb', 'native'] : ['native', 'rb'];
      for (const c of order) s[c].push(c === 'rb' ? redisBenchmark(port, test) : native(port, test));
    }
    const fig = (xs) => ({
      ops: median(xs.map((x) => x.ops)),
      user: median(xs.map((x) => (x.user * 1e6) / N)),
      sys: median(xs.map((x) => (x.sys * 1e6) / N)),
      cpu: median(xs.map((x) => ((x.user + x.sys) * 1e6) / N)),
    });
    const rb = fig(s.rb);
    const nat = fig(s.native);
    for (const [name, f] of [['redis-benchmark', rb], ['respbench native', nat]]) {
      console.log(`| ${test.toUpperCase()} | ${name} | ${f.ops.toFixed(0)} | ${f.user.toFixed(3)} | ${f.sys.toFixed(3)} | ${f.cpu.toFixed(3)} | ${(f.ops / rb.ops).toFixed(2)} | ${(f.cpu / rb.cpu).toFixed(2)} |`);
    }
  }
} finally {
  server.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
}
