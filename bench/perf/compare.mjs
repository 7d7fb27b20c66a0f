/**
 * The side-by-side rounds: every client runs every shape once per round, the
 * order reversed every other round (so no client always goes first on a warm
 * or cold server), then the medians and the ratios. A ratio always reads
 * "this row as a share of the named reference": ops/s as a percentage
 * (above 100% = more throughput), CPU per request as a factor (below 1.00× =
 * cheaper). The reference for "of <rev>" is the same engine built at the
 * baseline revision.
 *
 * Each client's CPU per request is its whole process's (user + sys) over the
 * requests, so it carries what the process costs whatever the run: Node's
 * start and the CLI's modules for respbench (about 0.25 s of CPU here: 0.25
 * us per request of a 1,000,000-request run), almost nothing for a C client.
 * With `fixed` (the workload), a run of one window per connection of the
 * same shape (pipeline × connections requests) is
 * measured three times per client first; the table then shows that fixed
 * CPU and the CPU per request net of it, beside the whole-process figure the
 * ratios use.
 *
 * Beside the ratio of medians to redis-benchmark, the median of each round's
 * ratio to redis-benchmark in that round (the server's speed moves from
 * round to round on a shared machine, and a round's clients share it); and
 * where the server's CPU was read around each run (one redis-server), its
 * CPU per request and the part of a request's time the server did not spend
 * (1/ops less it: with one connection, the client's turn and the wake-ups).
 */
import { median, printTable } from './processes.mjs';

/**
 * `clients`: `{ label, role, engine, run(shape) }`, role one of
 * 'redis-benchmark', 'memtier', 'this' (the working tree's build) or
 * 'baseline'. `shapes`: `{ test, pipeline, connections }`.
 */
export async function compareRounds(clients, shapes, rounds, onSample = () => {}, { fixed = null } = {}) {
  const results = [];
  for (const shape of shapes) {
    const fixedCpu = new Map();
    if (fixed) {
      // `fixed` is the workload (keyspace, value size) the rounds run; here with one request per connection.
      for (const c of clients) {
        const cpus = [];
        for (let i = 0; i < 3; i++) {
          const requests = shape.connections * shape.pipeline;
          cpus.push(((await c.run(shape, { ...fixed, requests })).cpuUsPerOp * requests) / 1e6);
        }
        fixedCpu.set(c, median(cpus));
      }
    }
    const samples = new Map(clients.map((c) => [c, []]));
    for (let round = 0; round < rounds; round++) {
      for (const c of round % 2 === 0 ? clients : [...clients].reverse()) {
        const s = await runAgainOnFailure(c, shape);
        samples.get(c).push(s);
        onSample(shape, c, s);
      }
    }
    const bench = clients.find((c) => c.role === 'redis-benchmark');
    const figures = new Map(
      clients.map((c) => {
        const mine = samples.get(c);
        const cpu = median(mine.map((s) => s.cpuUsPerOp));
        // The server's CPU per request around each run, where it was read (one redis-server).
        const served = mine.every((s) => s.serverUsPerOp !== undefined);
        const server = served ? median(mine.map((s) => s.serverUsPerOp)) : undefined;
        const outside = served ? median(mine.map((s) => 1e6 / s.ops - s.serverUsPerOp)) : undefined;
        // Each round's ops/s as a share of redis-benchmark's in the same round, the median of those.
        const paired = bench && bench !== c ? median(mine.map((s, i) => s.ops / samples.get(bench)[i].ops)) : undefined;
        const fixedSec = fixedCpu.get(c);
        // Net of the fixed CPU: each round's whole-process CPU less it, over that round's requests.
        const net = fixedSec === undefined ? undefined : median(mine.map((s) => s.cpuUsPerOp - (fixedSec * 1e6) / s.requests));
        return [c, { ops: median(mine.map((s) => s.ops)), cpu, fixedSec, net, server, outside, paired }];
      }),
    );
    results.push({ shape, figures, fixed: fixed !== null });
  }
  return results;
}

/**
 * One round's run of a client. A run that fails is run once more, saying so,
 * before the rounds give up: redis-benchmark once aborted mid-round here
 * ("All clients disconnected") and took the finished rounds down with it.
 */
async function runAgainOnFailure(c, shape) {
  try {
    return await c.run(shape);
  } catch (err) {
    console.error(`perf: ${shapeName(shape)}: ${c.label} failed (${err.message.replace(/\s+/g, ' ').trim()}); running it again`);
    return c.run(shape);
  }
}

export function shapeName(shape) {
  return `${shape.test.toUpperCase()} P${shape.pipeline} c${shape.connections}`;
}

const percent = (x) => `${(100 * x).toFixed(0)}%`;
const times = (x) => `${x.toFixed(2)}×`;

/** Prints one table: a row per shape and client, its medians and its ratios to the baseline build, redis-benchmark and memtier (the columns there are references for). */
export function printComparison(results, clients, { baselineName, prefix = [] }) {
  const bench = clients.find((c) => c.role === 'redis-benchmark');
  const memtier = clients.find((c) => c.role === 'memtier');
  const hasBaseline = clients.some((c) => c.role === 'baseline');
  // --io: this build's native engine on epoll, the reference of its io_uring row.
  const epoll = clients.some((c) => c.io === 'uring') ? clients.find((c) => c.role === 'this' && c.io === 'epoll') : undefined;
  const fixed = results.some((r) => r.fixed);
  const head = [...prefix.map((p) => p.name), 'shape', 'client', 'ops/s', 'CPU us/req'];
  if (fixed) head.push('fixed CPU ms', 'CPU us/req net of fixed');
  if (hasBaseline) head.push(`ops/s % of ${baselineName}`, `CPU/req × of ${baselineName}`);
  if (bench) head.push('ops/s % of redis-benchmark', 'CPU/req × of redis-benchmark', 'ops/s % of redis-benchmark, per round (median)');
  if (memtier) head.push('ops/s % of memtier', 'CPU/req × of memtier');
  if (epoll) head.push('ops/s % of native/epoll', 'CPU/req × of native/epoll');
  const served = results.some((r) => [...r.figures.values()].some((f) => f.server !== undefined));
  if (served) head.push('server CPU us/req', 'us/req outside the server');
  const rows = [];
  for (const { shape, figures } of results) {
    for (const c of clients) {
      const f = figures.get(c);
      const row = [...prefix.map((p) => p.value), shapeName(shape), c.label, f.ops.toFixed(0), f.cpu.toFixed(3)];
      if (fixed) row.push(f.fixedSec === undefined ? '-' : (f.fixedSec * 1e3).toFixed(0), f.net === undefined ? '-' : f.net.toFixed(3));
      const against = (ref) => {
        if (!ref || ref === c) return ['-', '-'];
        const r = figures.get(ref);
        return [percent(f.ops / r.ops), times(f.cpu / r.cpu)];
      };
      // The baseline's row of the same engine on the same --io backend (one from before --io: its only row).
      const baselineOf = (b) => b.role === 'baseline' && b.engine === c.engine && (b.io === null || b.io === c.io);
      if (hasBaseline) row.push(...against(c.role === 'this' ? clients.find(baselineOf) : null));
      if (bench) row.push(...against(bench), f.paired === undefined ? '-' : percent(f.paired));
      if (memtier) row.push(...against(memtier));
      if (epoll) row.push(...against(epoll));
      if (served) row.push(f.server === undefined ? '-' : f.server.toFixed(3), f.outside === undefined ? '-' : f.outside.toFixed(3));
      rows.push(row);
    }
  }
  printTable(head, rows);
}
