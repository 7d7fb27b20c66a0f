/**
 * One measured run of each client on one shape: redis-benchmark,
 * memtier_benchmark and respbench (any build: the CLI path says which), all
 * given the same workload. A shape is `{ test, pipeline, connections }`;
 * `target` says where the server is (`port`, `transport`: tcp | tls | unix,
 * `tlsPort`, `socket`, `cacert`) and, for a cluster, `primaries` (then
 * `connections` is per primary, as respbench's and memtier's -c are, and
 * redis-benchmark gets connections × primaries sockets so every client has
 * the same number). `w` is the workload: requests (total over every
 * connection), keyspace, valueSize. Each run resolves with ops/s and client
 * CPU per request (user + sys of the whole client process ÷ the requests it
 * sent).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { measured } from './processes.mjs';

function perRequest(r, requests) {
  return { requests, cpuUsPerOp: (r.cpu * 1e6) / requests, userUsPerOp: (r.user * 1e6) / requests, sysUsPerOp: (r.sys * 1e6) / requests, maxrssKb: r.maxrssKb };
}

export async function redisBenchmark(target, shape, w) {
  const where = target.transport === 'unix' ? ['-s', target.socket] : ['-p', String(target.transport === 'tls' ? target.tlsPort : target.port)];
  if (target.transport === 'tls') where.push('--tls', '--cacert', target.cacert);
  if (target.primaries) where.unshift('--cluster');
  const sockets = shape.connections * (target.primaries ?? 1);
  const r = await measured('redis-benchmark', [...where, '-P', String(shape.pipeline), '-c', String(sockets), '-n', String(w.requests), '-r', String(w.keyspace), '-d', String(w.valueSize), '-t', shape.test, '--csv']);
  const line = r.out.trim().split('\n').find((l) => l.startsWith(`"${shape.test.toUpperCase()}"`));
  if (!line) throw new Error(`no figures from redis-benchmark: ${r.out}${r.err}`);
  return { ops: Number(line.split(',')[1].replace(/"/g, '')), ...perRequest(r, w.requests) };
}

/**
 * memtier_benchmark on one thread (as redis-benchmark and respbench run by
 * default). Its -n is per connection, so each of the `connections` gets
 * requests ÷ connections (rounded up; the CPU per request divides by the
 * count it reports sending). Keys uniform over [1, keyspace] (--key-pattern R:R), the
 * whole run SETs (--ratio 1:0) or GETs (0:1).
 */
export async function memtier(target, shape, w) {
  const perConnection = Math.ceil(w.requests / shape.connections);
  const dir = mkdtempSync(path.join(tmpdir(), 'respbench-perf-memtier-'));
  const json = path.join(dir, 'result.json');
  try {
    const where = target.transport === 'unix' ? ['-S', target.socket] : ['-s', '127.0.0.1', '-p', String(target.transport === 'tls' ? target.tlsPort : target.port)];
    if (target.transport === 'tls') where.push('--tls', `--cacert=${target.cacert}`);
    if (target.primaries) where.push('--cluster-mode');
    const ratio = shape.test === 'set' ? '1:0' : '0:1';
    const r = await measured('memtier_benchmark', [
      ...where, '--protocol=redis', '-t', '1', '-c', String(shape.connections), '-n', String(perConnection), `--pipeline=${shape.pipeline}`,
      `--ratio=${ratio}`, '--key-pattern=R:R', '--key-minimum=1', `--key-maximum=${w.keyspace}`, `--data-size=${w.valueSize}`,
      '--key-prefix=memtier:', '--distinct-client-seed', '--hide-histogram', `--json-out-file=${json}`,
    ]);
    if (r.code !== 0) throw new Error(`memtier_benchmark failed (${r.code}): ${r.err.trim().split('\n').slice(-3).join(' ')}`);
    const totals = JSON.parse(readFileSync(json, 'utf8'))['ALL STATS']?.Totals;
    if (!totals || typeof totals['Ops/sec'] !== 'number') throw new Error(`no Totals in memtier_benchmark's JSON: ${r.out.slice(-500)}`);
    // Count: what memtier says it sent (in --cluster-mode too), the divisor of its CPU per request.
    return { ops: totals['Ops/sec'], ...perRequest(r, totals.Count || perConnection * shape.connections) };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** respbench from the build whose bin.js is `cli`; `extra` goes last (--set-cmd and the like). */
export async function respbench(cli, engine, target, shape, w, extra = []) {
  const where = target.transport === 'unix' ? ['-s', target.socket] : ['--port', String(target.transport === 'tls' ? target.tlsPort : target.port)];
  if (target.transport === 'tls') where.push('--tls', '--cacert', target.cacert);
  if (target.primaries) where.unshift('--cluster');
  const args = [cli, '--engine', engine, ...where, '--mode', shape.test, '--requests', String(w.requests), '--pipeline', String(shape.pipeline), '-c', String(shape.connections), '--keyspace', String(w.keyspace), '--value-size', String(w.valueSize), '--seed', '1', '--json', ...extra];
  if (shape.test === 'get') args.push('--no-preload');
  const r = await measured(process.execPath, args);
  // 3: the server answered some requests with errors; the figures still stand.
  if (r.code !== 0 && r.code !== 3) throw new Error(`respbench --engine ${engine} (${cli}) failed (${r.code}): ${r.err.trim()}`);
  const result = JSON.parse(r.out);
  return { ops: result.opsPerSec, p50Us: result.latencyUs.p50, p99Us: result.latencyUs.p99, bytesOut: result.bytesOut, ...perRequest(r, w.requests) };
}

/** Whether `engine` of the build at `cli` runs at all (the native addon may not have built), with --cluster when the target is one. */
export async function engineRuns(cli, engine, target, extra = []) {
  const args = [cli, '--engine', engine, '--port', String(target.port), '--requests', '10', '--json', ...extra];
  if (target.primaries) args.push('--cluster');
  const r = await measured(process.execPath, args);
  return r.code === 0;
}
