#!/usr/bin/env node
/**
 * Side by side on one redis-server: respbench (each engine that loads) from
 * this working tree's build, optionally the same engines built at an earlier
 * revision (--baseline), redis-benchmark, and memtier_benchmark when it is on
 * the PATH, with the same workload, alternating, several rounds. Prints, per
 * shape and client, median ops/s and median client CPU per request (user +
 * sys of the whole client process ÷ requests), and the ratios: this row as a
 * share of the baseline build of the same engine, of redis-benchmark and of
 * memtier (ops/s as a percentage, CPU per request as a factor). Beside
 * them, each client's fixed CPU (a run of one window per connection of the
 * same shape, median of 3: Node's start for respbench) and its CPU per
 * request net of that; the ratios stay on the whole-process figure.
 *
 *   pnpm perf                      # 2,000,000 requests, 3 rounds, SET and GET at -P 128 -c 1, large replies
 *   pnpm perf --baseline 404c66c   # that revision built too (cached), the issue-19 shapes (below)
 *   pnpm perf --baseline main --shapes set:128:1,get:1:50 --requests 500000
 *   pnpm perf --requests 500000 --rounds 5 --pipeline 128 --keyspace 100000 --memory
 *   pnpm perf --tests none --memory  # the memory cases only
 *   pnpm perf --tests large        # large replies only: JS vs native time per reply
 *   pnpm perf --transports tcp,tls,unix --pipeline 1 --connections 50
 *   pnpm perf --tests cluster --requests 200000 --rounds 3 [--baseline 404c66c]
 *   pnpm perf --shapes set:1:50,get:1:50 --io uring,epoll --syscalls 200000
 *
 * Run it on the working tree's build (`pnpm build` first).
 *
 * --baseline <rev> (any git revision: a commit, a branch, main~3) builds that
 * commit in a temporary git worktree (`pnpm install --frozen-lockfile`:
 * TypeScript and the Rust addon), kept under the OS temp directory per
 * resolved commit (respbench-perf-baseline/<commit>) so the next run against
 * it reuses it; the worktree's registration is removed once it is built, and
 * a build that fails or is interrupted is removed whole. Its engines then run
 * in the same rounds as everything else, against the same server.
 *
 * Shapes: --shapes issue19 is the list issue 19's "Done when" is measured on
 * (SET and GET at P128 c1, SET at P16 c50, SET and GET at P1 c50, SET at P1
 * c1); --shapes also takes TEST:PIPELINE:CONNECTIONS items (set:16:50,...).
 * Without --shapes it is issue19 under --baseline, unless --pipeline or
 * --connections is given, and otherwise each of --tests' set/get at
 * --pipeline and --connections (the script's shapes before --baseline).
 * --tests still chooses the tests: shapes of tests it does not name are left
 * out. Every shape runs --requests requests in total, whichever the client
 * (memtier's -n is per connection: it gets requests ÷ connections each).
 *
 * `cluster` (only when named in --tests) starts a local Redis Cluster of 3
 * primaries (no replicas) on free loopback ports, runs SET and GET at
 * pipeline 16 and at pipeline 1, 48 sockets on each side
 * (`redis-benchmark --cluster -c 48`; respbench `--cluster -c 16` and
 * memtier `--cluster-mode -c 16`, which are 16 sockets per primary; the
 * baseline too if its build knows --cluster), keyspace and value size as
 * given, and stops and removes the cluster afterwards (also on an error).
 *
 * --memory adds peak RSS per engine: at 500,000 and 5,000,000 requests (no
 * growth with the run's length), and with a 1 GiB window (-P 1024 of 1 MiB
 * values, the largest a run may have: memory must not grow with the window).
 *
 * The `rate` case (in the default --tests) runs each engine open loop at
 * --rate 20000 -c 4 for 3 s and prints its schedule lag (how late requests
 * went out), CPU per request and involuntary context switches.
 *
 * The `large` case (in the default --tests) times single huge replies, JS vs
 * native: LRANGE over a 2,000,000-element list, and a 16 MiB flat array (a
 * list of 2,396,745 one-byte elements), each read whole by one request.
 *
 * --transports: tcp (the plain port), tls (the server's TLS port on a
 * certificate made here with openssl; redis-benchmark --tls --cacert), unix
 * (its unix socket; redis-benchmark -s). Every client uses the same one.
 *
 * --io (default uring,epoll): the native engine of this build runs once per
 * I/O backend named (`respbench native/uring`, `respbench native/epoll`,
 * each `--io` of the CLI), in the same rounds as the others; the table then
 * has each row as a share of native/epoll too. A baseline build that knows
 * --io runs once per backend too, and each row's "of <rev>" is the baseline
 * on the same backend (before, its one row ran its default, io_uring here,
 * so native/epoll was held to io_uring); one from before issue 21 runs as it
 * is (it only had epoll). --syscalls N (default 200000, 0 =
 * none; needs strace) then runs every client once per shape with N
 * requests under `strace -f -c` and prints system calls per request
 * (bench/perf/syscalls.mjs says what is counted).
 *
 * An interrupt (Ctrl-C, SIGTERM, SIGHUP) stops the client running, every
 * server and cluster started here, and removes a baseline worktree being
 * built. Figures only: nothing here passes or fails. On a shared, noisy
 * machine compare only the ratios measured in one run.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { baselineBuild, resolveCommit } from './perf/baseline.mjs';
import { memtier, redisBenchmark, respbench, engineRuns } from './perf/clients.mjs';
import { compareRounds, printComparison, shapeName } from './perf/compare.mjs';
import { largeReplies } from './perf/large-replies.mjs';
import { rateLag } from './perf/rate-lag.mjs';
import { hasStrace, syscallRows } from './perf/syscalls.mjs';
import { freePort, onInterrupt, processCpuSec, waitPort } from './perf/processes.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const REPO = path.join(here, '..');
// The bin users run: the bundle of dist's modules (packages/cli/scripts/bundle.mjs).
const CLI = path.join(REPO, 'packages', 'cli', 'bundle', 'bin.js');

// A failure is one line (the servers are stopped by the finally blocks on the way out).
process.on('uncaughtException', (err) => {
  console.error(`perf: ${err.message}`);
  process.exit(1);
});

/** Bad input: one line naming the flag, exit 2. */
function usage(message) {
  console.error(`perf: ${message}`);
  process.exit(2);
}

let parsed;
try {
  parsed = parseArgs({
    options: {
      requests: { type: 'string', default: '2000000' },
      rounds: { type: 'string', default: '3' },
      pipeline: { type: 'string' },
      keyspace: { type: 'string', default: '100000' },
      'value-size': { type: 'string', default: '32' },
      tests: { type: 'string', default: 'set,get,large,rate' },
      engines: { type: 'string', default: 'native,js' },
      memory: { type: 'boolean', default: false },
      transports: { type: 'string', default: 'tcp' },
      connections: { type: 'string' },
      baseline: { type: 'string' },
      shapes: { type: 'string' },
      io: { type: 'string', default: 'uring,epoll' },
      syscalls: { type: 'string', default: '200000' },
      help: { type: 'boolean', default: false },
    },
  });
} catch (err) {
  usage(err.message.split('\n')[0]);
}
const opts = parsed.values;
if (opts.help) {
  // The usage is the header comment of this file: print it rather than keep a second copy.
  const header = /\/\*\*\n([\s\S]*?)\*\//.exec(readFileSync(fileURLToPath(import.meta.url), 'utf8'))[1];
  console.log(header.replace(/^ \* ?/gm, '').trimEnd());
  process.exit(0);
}

function positive(flag, raw) {
  if (!/^[1-9][0-9]*$/.test(raw)) usage(`--${flag} must be a whole number above 0, not "${raw}"`);
  return Number(raw);
}

const N = positive('requests', opts.requests);
const ROUNDS = positive('rounds', opts.rounds);
const workload = { requests: N, keyspace: positive('keyspace', opts.keyspace), valueSize: positive('value-size', opts['value-size']) };
const tests = opts.tests === 'none' ? [] : opts.tests.split(',');
for (const t of tests) if (!['set', 'get', 'large', 'cluster', 'rate'].includes(t)) usage(`--tests: unknown test "${t}" (set, get, large, cluster, rate, or none)`);
const transports = opts.transports.split(',');
for (const t of transports) if (!['tcp', 'tls', 'unix'].includes(t)) usage(`--transports: unknown transport "${t}" (tcp, tls, unix)`);
const engineNames = opts.engines.split(',');
for (const e of engineNames) if (!['native', 'js'].includes(e)) usage(`--engines: unknown engine "${e}" (native, js)`);

const ioBackends = opts.io.split(',');
for (const io of ioBackends) if (!['uring', 'epoll', 'auto'].includes(io)) usage(`--io: unknown backend "${io}" (uring, epoll, auto)`);
if (!/^[0-9]+$/.test(opts.syscalls)) usage(`--syscalls must be a whole number (requests of the strace run; 0: none), not "${opts.syscalls}"`);
const syscallRequests = Number(opts.syscalls);

/** The shapes issue 19's "Done when" is measured on. */
const ISSUE19_SHAPES = ['set:128:1', 'get:128:1', 'set:16:50', 'set:1:50', 'get:1:50', 'set:1:1'];

function parseShapes(list) {
  return list.map((item) => {
    const m = /^(set|get):([1-9][0-9]*):([1-9][0-9]*)$/.exec(item);
    if (!m) usage(`--shapes: "${item}" is not TEST:PIPELINE:CONNECTIONS (e.g. set:128:1) or issue19`);
    return { test: m[1], pipeline: Number(m[2]), connections: Number(m[3]) };
  });
}

function chosenShapes() {
  if (opts.shapes !== undefined) return parseShapes(opts.shapes === 'issue19' ? ISSUE19_SHAPES : opts.shapes.split(','));
  if (opts.baseline !== undefined && opts.pipeline === undefined && opts.connections === undefined) return parseShapes(ISSUE19_SHAPES);
  const pipeline = positive('pipeline', opts.pipeline ?? '128');
  const connections = positive('connections', opts.connections ?? '1');
  return ['set', 'get'].map((test) => ({ test, pipeline, connections }));
}
const shapes = chosenShapes().filter((s) => tests.includes(s.test));

let baselineCommit = null;
if (opts.baseline !== undefined) {
  baselineCommit = resolveCommit(REPO, opts.baseline);
  if (!baselineCommit) usage(`--baseline: "${opts.baseline}" names no commit in this repository`);
}
const baselineName = baselineCommit ? baselineCommit.slice(0, 7) : null;
if (!existsSync(CLI)) usage(`no build here (${path.relative(process.cwd(), CLI)} is missing): run pnpm build first`);
const say = (line) => console.error(`perf: ${line}`);
const hasMemtier = spawnSync('memtier_benchmark', ['--version'], { stdio: 'ignore' }).status === 0;

const baselineCli = baselineCommit ? await baselineBuild(REPO, baselineCommit, say) : null;

/** Every client for `target`: the references, then each engine of this build and of the baseline that runs there. */
async function clientsFor(target) {
  const clients = [{ label: 'redis-benchmark', role: 'redis-benchmark', run: withServer(target, (shape, w = workload) => redisBenchmark(target, shape, w)) }];
  if (hasMemtier) clients.push({ label: 'memtier', role: 'memtier', run: withServer(target, (shape, w = workload) => memtier(target, shape, w)) });
  const builds = [{ cli: CLI, role: 'this', suffix: '' }];
  if (baselineCli) builds.push({ cli: baselineCli, role: 'baseline', suffix: ` @${baselineName}` });
  for (const build of builds) {
    for (const engine of engineNames) {
      // The native engine once per --io backend, a baseline's too when its build knows --io (each row is
      // then held to the baseline on the same backend, not to whatever its default picks); the JS engine,
      // and a baseline from before --io, as they are.
      const perIo = engine === 'native' && (build.role === 'this' || (await engineRuns(build.cli, engine, target, ['--io', ioBackends[0]])));
      const variants = perIo ? ioBackends.map((io) => ({ io, name: `native/${io}`, extra: ['--io', io] })) : [{ io: null, name: engine, extra: [] }];
      for (const v of variants) {
        if (!(await engineRuns(build.cli, engine, target, v.extra))) {
          say(`respbench ${v.name}${build.suffix} does not run here${target.primaries ? ' with --cluster' : ''}; left out`);
          continue;
        }
        clients.push({ label: `respbench ${v.name}${build.suffix}`, role: build.role, engine, io: v.io, run: withServer(target, (shape, w = workload) => respbench(build.cli, engine, target, shape, w, v.extra)) });
      }
    }
  }
  return clients;
}

/**
 * A client's run with the server's CPU read around it (`target.serverPid`, the one redis-server): its
 * CPU per request of that run, `serverUsPerOp`. With one connection the client and the server take
 * turns, and 1/ops less the server's CPU per request is the part of each request's round trip the
 * server did not spend (the client, the kernel's wake-ups): the server's speed, which moves from run to
 * run on a shared machine, taken out.
 */
function withServer(target, run) {
  if (!target.serverPid) return run;
  return async (shape, w) => {
    const before = processCpuSec(target.serverPid);
    const s = await run(shape, w);
    const after = processCpuSec(target.serverPid);
    if (before !== null && after !== null) s.serverUsPerOp = ((after - before) * 1e6) / s.requests;
    return s;
  };
}

const onSample = (shape, client, s) => say(`${shapeName(shape)}: ${client.label} ${s.ops.toFixed(0)} ops/s, ${s.cpuUsPerOp.toFixed(3)} us CPU/req`);

const port = await freePort();
const tlsPort = transports.includes('tls') ? await freePort() : 0;
const dir = mkdtempSync(path.join(tmpdir(), 'respbench-perf-'));
const socket = path.join(dir, 'redis.sock');
const serverArgs = ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--appendonly', 'no'];
const cacert = path.join(dir, 'ca.pem');
if (transports.includes('tls')) {
  // The project's certificate maker (the working tree's build), as the study and the tests use it.
  const { makeCertificates } = await import('../packages/cli/dist/certificates.js');
  const c = makeCertificates(dir);
  serverArgs.push('--tls-port', String(tlsPort), '--tls-cert-file', c.cert, '--tls-key-file', c.key, '--tls-ca-cert-file', c.ca, '--tls-auth-clients', 'no');
}
if (transports.includes('unix')) serverArgs.push('--unixsocket', socket, '--unixsocketperm', '700');
const server = spawn('redis-server', serverArgs, { stdio: 'ignore' });
const stopServer = () => {
  forgetServer();
  server.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
};
const forgetServer = onInterrupt(stopServer);
try {
  await waitPort(port);
  if (tlsPort) await waitPort(tlsPort);
  if (baselineCommit) console.log(`baseline: ${opts.baseline} = ${baselineCommit} (respbench … @${baselineName})`);
  if (!hasMemtier) console.log('memtier_benchmark is not on the PATH: no memtier rows');
  if (shapes.length > 0) {
    console.log(`redis-server on 127.0.0.1:${port}; ${N} requests per run, keyspace ${workload.keyspace}, ${workload.valueSize} B values, ${ROUNDS} rounds (medians); transports ${transports.join(', ')}`);
    console.log('ratios: this row as a share of the named reference (ops/s as %, CPU per request as ×); "of <commit>" compares with the same engine built at the baseline');
    for (const transport of transports) {
      const target = { port, transport, tlsPort, socket, cacert, serverPid: server.pid };
      const clients = await clientsFor(target);
      const results = await compareRounds(clients, shapes, ROUNDS, onSample, { fixed: workload });
      printComparison(results, clients, { baselineName, prefix: [{ name: 'transport', value: transport }] });
      if (syscallRequests > 0 && hasStrace()) await syscallRows(clients, shapes, { ...workload, requests: syscallRequests }, say);
      else if (syscallRequests > 0) console.log('strace is not on the PATH: no system call counts');
    }
  }
  const engines = [];
  for (const e of engineNames) if (await engineRuns(CLI, e, { port })) engines.push(e);
  if (tests.includes('large')) await largeReplies(CLI, port, engines, ROUNDS);
  if (tests.includes('rate')) await rateLag(CLI, port, engines, ROUNDS);
  if (tests.includes('cluster')) {
    // It starts the cluster with the working tree's build (dist), so only once that is known to be there.
    const { clusterRows } = await import('./perf/cluster-rows.mjs');
    await clusterRows(clientsFor, workload, ROUNDS, baselineName, onSample);
  }
  if (opts.memory) {
    const target = { port, transport: 'tcp' };
    // A window of 1 GiB (the limit): 1024 requests of 1 MiB in flight. 64 keys keep the server's own memory small.
    const windowRequests = 4096;
    for (const e of engines) {
      const w = await respbench(CLI, e, target, { test: 'set', pipeline: 1024, connections: 1 }, { requests: windowRequests, keyspace: 64, valueSize: 1048576 });
      console.log(`memory ${e}: peak RSS ${Math.round(w.maxrssKb / 1024)} MiB with -P 1024 -d 1MiB (${windowRequests} SETs, ${(w.bytesOut / 2 ** 30).toFixed(2)} GiB out; latency p50 ${(w.p50Us / 1000).toFixed(1)} ms, p99 ${(w.p99Us / 1000).toFixed(1)} ms)`);
    }
    const shape = { test: 'set', pipeline: positive('pipeline', opts.pipeline ?? '128'), connections: positive('connections', opts.connections ?? '1') };
    for (const e of engines) {
      const small = await respbench(CLI, e, target, shape, { ...workload, requests: 500_000 });
      const big = await respbench(CLI, e, target, shape, { ...workload, requests: 5_000_000 });
      console.log(`memory ${e}: peak RSS ${Math.round(small.maxrssKb / 1024)} MiB at 500,000 requests, ${Math.round(big.maxrssKb / 1024)} MiB at 5,000,000 (ratio ${(big.maxrssKb / small.maxrssKb).toFixed(2)})`);
    }
  }
} finally {
  stopServer();
}
