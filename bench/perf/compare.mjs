/**
 * The side-by-side rounds: every client runs every shape once per round, the
 * order reversed every other round (so no client always goes first on a warm
 * or cold server), then the medians and the ratios. A ratio always reads
 * "this row as a share of the named reference": ops/s as a percentage
 * (above 100% = more throughput), CPU per request as a factor (below 1.00× =
 * cheaper). The reference for "of <rev>" is the same engine built at the
 * baseline revision.
 */
import { median, printTable } from './processes.mjs';

/**
 * `clients`: `{ label, role, engine, run(shape) }`, role one of
 * 'redis-benchmark', 'memtier', 'this' (the working tree's build) or
 * 'baseline'. `shapes`: `{ test, pipeline, connections }`.
 */
export async function compareRounds(clients, shapes, rounds, onSample = () => {}) {
  const results = [];
  for (const shape of shapes) {
    const samples = new Map(clients.map((c) => [c, []]));
    for (let round = 0; round < rounds; round++) {
      for (const c of round % 2 === 0 ? clients : [...clients].reverse()) {
        const s = await c.run(shape);
        samples.get(c).push(s);
        onSample(shape, c, s);
      }
    }
    const figures = new Map(clients.map((c) => [c, { ops: median(samples.get(c).map((s) => s.ops)), cpu: median(samples.get(c).map((s) => s.cpuUsPerOp)) }]));
    results.push({ shape, figures });
  }
  return results;
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
  const head = [...prefix.map((p) => p.name), 'shape', 'client', 'ops/s', 'CPU us/req'];
  if (hasBaseline) head.push(`ops/s % of ${baselineName}`, `CPU/req × of ${baselineName}`);
  if (bench) head.push('ops/s % of redis-benchmark', 'CPU/req × of redis-benchmark');
  if (memtier) head.push('ops/s % of memtier', 'CPU/req × of memtier');
  if (epoll) head.push('ops/s % of native/epoll', 'CPU/req × of native/epoll');
  const rows = [];
  for (const { shape, figures } of results) {
    for (const c of clients) {
      const f = figures.get(c);
      const row = [...prefix.map((p) => p.value), shapeName(shape), c.label, f.ops.toFixed(0), f.cpu.toFixed(3)];
      const against = (ref) => {
        if (!ref || ref === c) return ['-', '-'];
        const r = figures.get(ref);
        return [percent(f.ops / r.ops), times(f.cpu / r.cpu)];
      };
      // The baseline's row of the same engine on the same --io backend (one from before --io: its only row).
      const baselineOf = (b) => b.role === 'baseline' && b.engine === c.engine && (b.io === null || b.io === c.io);
      if (hasBaseline) row.push(...against(c.role === 'this' ? clients.find(baselineOf) : null));
      if (bench) row.push(...against(bench));
      if (memtier) row.push(...against(memtier));
      if (epoll) row.push(...against(epoll));
      rows.push(row);
    }
  }
  printTable(head, rows);
}
