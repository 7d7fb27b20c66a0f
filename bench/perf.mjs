#!/usr/bin/env node
/**
 * Side by side on one redis-server: redis-benchmark and respbench (each
 * engine that loads) with the same workload, one after another, alternating,
 * several rounds. Prints median ops/s and client CPU per request (user+sys of
 * the whole client process / requests) with ratios to redis-benchmark.
 *
 *   pnpm perf                      # 2,000,000 requests, 3 rounds
 *   pnpm perf --requests 500000 --rounds 5 --pipeline 128 --keyspace 100000 --memory
 *   pnpm perf --tests none --memory  # the memory cases only
 *   pnpm perf --tests large        # large replies only: JS vs native time per reply
 *   pnpm perf --transports tcp,tls,unix --pipeline 1 --connections 50
 *   pnpm perf --tests cluster --requests 200000 --rounds 3
 *
 * `cluster` (only when named in --tests) starts a local Redis Cluster of 3
 * primaries (no replicas) on free loopback ports, runs SET and GET at
 * pipeline 16 and at pipeline 1, 48 sockets on each side
 * (`redis-benchmark --cluster -c 48`; respbench `--cluster -c 16`, which is
 * 16 sockets per primary), keyspace and value size as given, and stops and
 * removes the cluster afterwards (also on an error).
 *
 * --memory adds peak RSS per engine: at 500,000 and 5,000,000 requests (no
 * growth with the run's length), and with a 1 GiB window (-P 1024 of 1 MiB
 * values, the largest a run may have: memory must not grow with the window).
 *
 * The `large` case (in the default --tests) times single huge replies, JS vs
 * native: LRANGE over a 2,000,000-element list, and a 16 MiB flat array (a
 * list of 2,396,745 one-byte elements), each read whole by one request.
 *
 * --transports: tcp (the plain port), tls (the server's TLS port on a
 * certificate made here with openssl; redis-benchmark --tls --cacert), unix
 * (its unix socket; redis-benchmark -s). Every client uses the same one.
 *
 * Figures only: nothing here passes or fails. The machine is shared and
 * noisy, so compare the ratios measured in one run.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const here = path.dirname(fileURLToPath(import.meta.url));
const CLI = path.join(here, '..', 'packages', 'cli', 'dist', 'bin.js');

const { values: opts } = parseArgs({
  options: {
    requests: { type: 'string', default: '2000000' },
    rounds: { type: 'string', default: '3' },
    pipeline: { type: 'string', default: '128' },
    keyspace: { type: 'string', default: '100000' },
    'value-size': { type: 'string', default: '32' },
    tests: { type: 'string', default: 'set,get,large' },
    engines: { type: 'string', default: 'native,js' },
    memory: { type: 'boolean', default: false },
    transports: { type: 'string', default: 'tcp' },
    connections: { type: 'string', default: '1' },
  },
});
const N = Number(opts.requests);
const ROUNDS = Number(opts.rounds);

/** Runs a command, returns stdout and the child's CPU seconds and peak RSS (from getrusage). */
function measured(cmd, args) {
  const wrapper = [
    'import json, resource, subprocess, sys',
    'p = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.PIPE)',
    'r = resource.getrusage(resource.RUSAGE_CHILDREN)',
    'print(json.dumps({"code": p.returncode, "cpu": r.ru_utime + r.ru_stime, "user": r.ru_utime, "sys": r.ru_stime, "maxrssKb": r.ru_maxrss, "out": p.stdout.decode(), "err": p.stderr.decode()}))',
  ].join('\n');
  const r = spawnSync('python3', ['-c', wrapper, cmd, ...args], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  if (r.status !== 0) throw new Error(`measuring ${cmd} failed: ${r.stderr}`);
  return JSON.parse(r.stdout);
}

function freePort() {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

async function waitPort(port) {
  for (let i = 0; i < 200; i++) {
    const ok = await new Promise((res) => {
      const c = net.connect(port, '127.0.0.1');
      c.once('connect', () => (c.destroy(), res(true)));
      c.once('error', () => res(false));
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('redis-server did not start');
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** How each client reaches the server over a transport: redis-benchmark's flags and respbench's. */
let transportArgs = { tcp: { bench: [], respbench: [] } };

function redisBenchmark(port, test, transport) {
  const where = transport === 'unix' ? [] : ['-p', String(transport === 'tls' ? tlsPort : port)];
  const r = measured('redis-benchmark', [...where, ...transportArgs[transport].bench, '-P', opts.pipeline, '-c', opts.connections, '-n', String(N), '-r', opts.keyspace, '-d', opts['value-size'], '-t', test, '--csv']);
  const line = r.out.trim().split('\n').find((l) => l.startsWith(`"${test.toUpperCase()}"`));
  if (!line) throw new Error(`no figures from redis-benchmark: ${r.out}${r.err}`);
  return { ops: Number(line.split(',')[1].replace(/"/g, '')), cpuUsPerOp: (r.cpu * 1e6) / N, userUsPerOp: (r.user * 1e6) / N, sysUsPerOp: (r.sys * 1e6) / N, maxrssKb: r.maxrssKb };
}

function respbench(port, engine, test, requests = N, shape = {}, transport = 'tcp') {
  const pipeline = shape.pipeline ?? opts.pipeline;
  const keyspace = shape.keyspace ?? opts.keyspace;
  const valueSize = shape.valueSize ?? opts['value-size'];
  const where = ['--port', String(transport === 'tls' ? tlsPort : port), ...transportArgs[transport].respbench];
  const args = [CLI, '--engine', engine, ...where, '--mode', test, '--requests', String(requests), '--pipeline', pipeline, '-c', opts.connections, '--keyspace', keyspace, '--value-size', valueSize, '--seed', '1', '--json'];
  if (test === 'get') args.push('--no-preload');
  const r = measured(process.execPath, args);
  if (r.code !== 0 && r.code !== 3) throw new Error(`respbench --engine ${engine} failed (${r.code}): ${r.err}`);
  const result = JSON.parse(r.out);
  return { ops: result.opsPerSec, p50Us: result.latencyUs.p50, p99Us: result.latencyUs.p99, bytesOut: result.bytesOut, cpuUsPerOp: (r.cpu * 1e6) / requests, userUsPerOp: (r.user * 1e6) / requests, sysUsPerOp: (r.sys * 1e6) / requests, maxrssKb: r.maxrssKb, engine: result.engine };
}

function engineLoads(port, engine) {
  const r = spawnSync(process.execPath, [CLI, '--engine', engine, '--port', String(port), '--requests', '10', '--json'], { encoding: 'utf8' });
  return r.status === 0;
}

/**
 * Large replies: each list is built once (RPUSH through respbench itself),
 * then read with LRANGE key 0 -1 by each engine, alternating, ROUNDS times;
 * prints the median time per reply and the JS/native ratio.
 */
function largeReplies(port, engines) {
  const lists = [
    { name: 'LRANGE 2,000,000 elements (8 B each)', prefix: 'perf:large:2m:', elements: 2_000_000, size: 8 },
    { name: '16 MiB flat array (1 B elements)', prefix: 'perf:large:16m:', elements: Math.floor((16 << 20) / 7), size: 1 },
  ];
  const builder = engines.includes('native') ? 'native' : engines[0];
  const rows = [];
  for (const list of lists) {
    const fill = spawnSync(process.execPath, [CLI, '--engine', builder, '--port', String(port), '--mode', 'set', '--set-cmd', 'RPUSH __key__ __data__', '--keyspace', '1', '--key-prefix', list.prefix, '--requests', String(list.elements), '--pipeline', '1000', '--value-size', String(list.size), '--seed', '1', '-q'], { encoding: 'utf8' });
    if (fill.status !== 0) throw new Error(`building ${list.name} failed: ${fill.stderr}`);
    const samples = Object.fromEntries(engines.map((e) => [e, []]));
    let replyBytes = 0;
    for (let round = 0; round < ROUNDS; round++) {
      for (const e of round % 2 === 0 ? engines : [...engines].reverse()) {
        const args = [CLI, '--engine', e, '--port', String(port), '--mode', 'get', '--get-cmd', 'LRANGE __key__ 0 -1', '--keyspace', '1', '--key-prefix', list.prefix, '--requests', '1', '--pipeline', '1', '--no-preload', '--timeout', '5m', '--json'];
        const r = measured(process.execPath, args);
        if (r.code !== 0) throw new Error(`respbench --engine ${e} on ${list.name} failed (${r.code}): ${r.err}`);
        const result = JSON.parse(r.out);
        replyBytes = result.bytesIn;
        samples[e].push({ sec: result.elapsedSec, maxrssKb: r.maxrssKb });
      }
    }
    const native = samples.native ? median(samples.native.map((s) => s.sec)) : null;
    for (const e of engines) {
      const sec = median(samples[e].map((s) => s.sec));
      rows.push([list.name, e, `${(replyBytes / 2 ** 20).toFixed(1)} MiB`, sec.toFixed(3), native ? (sec / native).toFixed(2) : '-', String(Math.round(median(samples[e].map((s) => s.maxrssKb)) / 1024))]);
    }
  }
  const head = ['reply', 'engine', 'reply size', 's per reply', 'vs native', 'peak RSS MiB'];
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const fmt = (r) => `| ${r.map((v, i) => v.padEnd(widths[i])).join(' | ')} |`;
  console.log(`large replies (one request each, ${ROUNDS} rounds, medians):`);
  console.log(fmt(head));
  console.log(`| ${widths.map((w) => '-'.repeat(w)).join(' | ')} |`);
  for (const r of rows) console.log(fmt(r));
}

/** A CA and a server certificate for 127.0.0.1 signed by it, for the tls transport. */
function makeCertificates(dir) {
  const run = (...args) => {
    const r = spawnSync('openssl', args, { cwd: dir, encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`openssl ${args.join(' ')} failed: ${r.stderr}`);
  };
  run('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '2', '-subj', '/CN=respbench perf CA');
  writeFileSync(path.join(dir, 'server.ext'), 'subjectAltName=DNS:localhost,IP:127.0.0.1\n');
  run('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=localhost');
  run('x509', '-req', '-in', 'server.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'server.pem', '-days', '2', '-extfile', 'server.ext');
}

/**
 * What to stop if the script is interrupted (Ctrl-C, SIGTERM, SIGHUP): every
 * server it started, before it exits. A measurement in progress (spawnSync)
 * finishes first; then the handler runs.
 */
const cleanups = new Set();
for (const [signal, code] of [['SIGINT', 130], ['SIGTERM', 143], ['SIGHUP', 129]]) {
  process.on(signal, () => {
    for (const c of cleanups) c();
    console.error(`perf: interrupted (${signal}); stopped the servers it started`);
    process.exit(code);
  });
}

/** A local cluster of `primaries` redis-servers (no replicas), joined and ready; `stop()` ends it and removes its files. */
async function startCluster(primaries) {
  const dirs = [];
  const procs = [];
  const ports = [];
  const stop = () => {
    cleanups.delete(stop);
    for (const p of procs) p.kill('SIGKILL');
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  };
  cleanups.add(stop);
  try {
    for (let i = 0; i < primaries; i++) {
      const p = await freePort();
      const bus = await freePort();
      const d = mkdtempSync(path.join(tmpdir(), 'respbench-perf-cluster-'));
      dirs.push(d);
      ports.push(p);
      procs.push(spawn('redis-server', ['--port', String(p), '--bind', '127.0.0.1', '--dir', d, '--save', '', '--appendonly', 'no', '--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf', '--cluster-port', String(bus)], { stdio: 'ignore' }));
    }
    for (const p of ports) await waitPort(p);
    const create = spawnSync('redis-cli', ['--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-yes'], { encoding: 'utf8', timeout: 60_000 });
    if (create.status !== 0) throw new Error(`redis-cli --cluster create failed: ${create.stderr}${create.stdout}`);
    for (let i = 0; ; i++) {
      const ok = ports.every((p) => /cluster_state:ok/.test(spawnSync('redis-cli', ['-p', String(p), 'CLUSTER', 'INFO'], { encoding: 'utf8' }).stdout));
      if (ok) break;
      if (i > 300) throw new Error('the cluster did not reach cluster_state:ok');
      await new Promise((r) => setTimeout(r, 100));
    }
    return { ports, stop };
  } catch (err) {
    stop();
    throw err;
  }
}

/**
 * The cluster rows: redis-benchmark --cluster against respbench --cluster
 * (each engine that loads), SET and GET at -P 16 and -P 1, alternating,
 * ROUNDS rounds; medians of ops/s and client CPU per request.
 */
async function clusterRows(engines) {
  const cluster = await startCluster(3);
  const seed = cluster.ports[0];
  const perPrimary = 16;
  const sockets = perPrimary * cluster.ports.length;
  try {
    const clients = ['redis-benchmark', ...engines.map((e) => `respbench ${e}`)];
    console.log(`cluster: 3 primaries on 127.0.0.1 (seed ${seed}); ${N} requests, ${sockets} sockets each side, keyspace ${opts.keyspace}, ${opts['value-size']} B values, ${ROUNDS} rounds (medians)`);
    const rows = [];
    for (const pipeline of ['16', '1']) {
      for (const test of ['set', 'get']) {
        const samples = Object.fromEntries(clients.map((c) => [c, []]));
        for (let round = 0; round < ROUNDS; round++) {
          for (const c of round % 2 === 0 ? clients : [...clients].reverse()) {
            if (c === 'redis-benchmark') {
              const r = measured('redis-benchmark', ['--cluster', '-p', String(seed), '-P', pipeline, '-c', String(sockets), '-n', String(N), '-r', opts.keyspace, '-d', opts['value-size'], '-t', test, '--csv']);
              const line = r.out.trim().split('\n').find((l) => l.startsWith(`"${test.toUpperCase()}"`));
              if (!line) throw new Error(`no figures from redis-benchmark --cluster: ${r.out}${r.err}`);
              samples[c].push({ ops: Number(line.split(',')[1].replace(/"/g, '')), cpu: (r.cpu * 1e6) / N });
            } else {
              const engine = c.split(' ')[1];
              const args = [CLI, '--cluster', '--engine', engine, '--port', String(seed), '--mode', test, '--requests', String(N), '--pipeline', pipeline, '-c', String(perPrimary), '--keyspace', opts.keyspace, '--value-size', opts['value-size'], '--seed', '1', '--json'];
              if (test === 'get') args.push('--no-preload');
              const r = measured(process.execPath, args);
              if (r.code !== 0 && r.code !== 3) throw new Error(`respbench --cluster --engine ${engine} failed (${r.code}): ${r.err}`);
              samples[c].push({ ops: JSON.parse(r.out).opsPerSec, cpu: (r.cpu * 1e6) / N });
            }
          }
        }
        const base = { ops: median(samples['redis-benchmark'].map((s) => s.ops)), cpu: median(samples['redis-benchmark'].map((s) => s.cpu)) };
        for (const c of clients) {
          const ops = median(samples[c].map((s) => s.ops));
          const cpu = median(samples[c].map((s) => s.cpu));
          rows.push([`P${pipeline}`, test.toUpperCase(), c, ops.toFixed(0), cpu.toFixed(3), `${((100 * ops) / base.ops).toFixed(0)}%`, (cpu / base.cpu).toFixed(2)]);
        }
      }
    }
    const head = ['pipeline', 'test', 'client', 'ops/s', 'CPU us/op', 'as % of redis-benchmark', 'CPU ratio'];
    const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
    const fmt = (r) => `| ${r.map((v, i) => v.padEnd(widths[i])).join(' | ')} |`;
    console.log(fmt(head));
    console.log(`| ${widths.map((w) => '-'.repeat(w)).join(' | ')} |`);
    for (const r of rows) console.log(fmt(r));
  } finally {
    cluster.stop();
  }
}

const transports = opts.transports.split(',');
const port = await freePort();
const tlsPort = transports.includes('tls') ? await freePort() : 0;
const dir = mkdtempSync(path.join(tmpdir(), 'respbench-perf-'));
const socket = path.join(dir, 'redis.sock');
const serverArgs = ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--appendonly', 'no'];
if (transports.includes('tls')) {
  makeCertificates(dir);
  const f = (n) => path.join(dir, n);
  serverArgs.push('--tls-port', String(tlsPort), '--tls-cert-file', f('server.pem'), '--tls-key-file', f('server.key'), '--tls-ca-cert-file', f('ca.pem'), '--tls-auth-clients', 'no');
  transportArgs.tls = { bench: ['--tls', '--cacert', f('ca.pem')], respbench: ['--tls', '--cacert', f('ca.pem')] };
}
if (transports.includes('unix')) {
  serverArgs.push('--unixsocket', socket, '--unixsocketperm', '700');
  transportArgs.unix = { bench: ['-s', socket], respbench: ['-s', socket] };
}
const server = spawn('redis-server', serverArgs, { stdio: 'ignore' });
const stopServer = () => {
  cleanups.delete(stopServer);
  server.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
};
cleanups.add(stopServer);
try {
  await waitPort(port);
  if (tlsPort) await waitPort(tlsPort);
  const engines = opts.engines.split(',').filter((e) => engineLoads(port, e));
  const clients = ['redis-benchmark', ...engines.map((e) => `respbench ${e}`)];
  console.log(`redis-server on 127.0.0.1:${port}; ${N} requests, pipeline ${opts.pipeline}, ${opts.connections} connection(s), keyspace ${opts.keyspace}, ${opts['value-size']} B values, ${ROUNDS} rounds (medians); transports ${transports.join(', ')}`);
  const rows = [];
  for (const transport of transports)
  for (const test of opts.tests === 'none' ? [] : opts.tests.split(',').filter((t) => t !== 'large' && t !== 'cluster')) {
    const samples = Object.fromEntries(clients.map((c) => [c, []]));
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 === 0 ? clients : [...clients].reverse();
      for (const c of order) {
        samples[c].push(c === 'redis-benchmark' ? redisBenchmark(port, test, transport) : respbench(port, c.split(' ')[1], test, N, {}, transport));
      }
    }
    const base = { ops: median(samples['redis-benchmark'].map((s) => s.ops)), cpu: median(samples['redis-benchmark'].map((s) => s.cpuUsPerOp)) };
    for (const c of clients) {
      const ops = median(samples[c].map((s) => s.ops));
      const cpu = median(samples[c].map((s) => s.cpuUsPerOp));
      const user = median(samples[c].map((s) => s.userUsPerOp));
      const sys = median(samples[c].map((s) => s.sysUsPerOp));
      rows.push([transport, test.toUpperCase(), c, ops.toFixed(0), user.toFixed(3), sys.toFixed(3), cpu.toFixed(3), (ops / base.ops).toFixed(2), (cpu / base.cpu).toFixed(2)]);
    }
  }
  const head = ['transport', 'test', 'client', 'ops/s', 'user us/op', 'sys us/op', 'CPU us/op', 'ops ratio', 'CPU ratio'];
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const fmt = (r) => `| ${r.map((v, i) => v.padEnd(widths[i])).join(' | ')} |`;
  if (rows.length > 0) {
    console.log(fmt(head));
    console.log(`| ${widths.map((w) => '-'.repeat(w)).join(' | ')} |`);
    for (const r of rows) console.log(fmt(r));
  }
  if (opts.tests.split(',').includes('large')) largeReplies(port, engines);
  if (opts.tests.split(',').includes('cluster')) await clusterRows(engines);
  if (opts.memory) {
    // A window of 1 GiB (the limit): 1024 requests of 1 MiB in flight. 64 keys keep the server's own memory small.
    const window = { pipeline: '1024', valueSize: '1048576', keyspace: '64' };
    const windowRequests = 4096;
    for (const e of engines) {
      const w = respbench(port, e, 'set', windowRequests, window);
      console.log(`memory ${e}: peak RSS ${Math.round(w.maxrssKb / 1024)} MiB with -P 1024 -d 1MiB (${windowRequests} SETs, ${(w.bytesOut / 2 ** 30).toFixed(2)} GiB out; latency p50 ${(w.p50Us / 1000).toFixed(1)} ms, p99 ${(w.p99Us / 1000).toFixed(1)} ms)`);
    }
    for (const e of engines) {
      const small = respbench(port, e, 'set', 500_000);
      const big = respbench(port, e, 'set', 5_000_000);
      console.log(`memory ${e}: peak RSS ${Math.round(small.maxrssKb / 1024)} MiB at 500,000 requests, ${Math.round(big.maxrssKb / 1024)} MiB at 5,000,000 (ratio ${(big.maxrssKb / small.maxrssKb).toFixed(2)})`);
    }
  }
} finally {
  stopServer();
}
