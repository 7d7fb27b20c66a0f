/**
 * The command suite (`-t set,get,incr,...`): redis-benchmark's tests with its
 * meanings, run one after another through the same engines, printed in
 * redis-benchmark's `-q` form, as CSV, or as JSON; and the same suite against
 * two targets side by side with the ratio per test.
 */
import { parseTemplate, refusedOutsideQuotes, TemplateError } from './engine-js/command.js';
import type { Engine, Plan } from './engine-js/plan.js';
import type { RunOptions } from './engine-js/progress.js';
import { runPlan, type RunResult } from './run.js';
import { printable, shownQuoted } from './printable.js';
import { UsageError } from './validate.js';

export interface SuiteTest {
  /** The name users pass to -t. */
  name: string;
  /** How redis-benchmark labels the line. */
  label: string;
  /** The command template; keys are built from the run's --key-prefix. */
  command: (prefix: string) => string;
  /** Must run first, untimed in the figures of this test (LRANGE needs a list). */
  fill?: SuiteTest;
}

const LRANGE_FILL: SuiteTest = {
  name: 'lpush',
  label: 'LPUSH (needed to benchmark LRANGE)',
  command: (p) => `LPUSH ${p}mylist __data__`,
};

function lrange(n: number): SuiteTest {
  return {
    name: `lrange_${n}`,
    label: `LRANGE_${n} (first ${n} elements)`,
    command: (p) => `LRANGE ${p}mylist 0 ${n - 1}`,
    fill: LRANGE_FILL,
  };
}

export const SUITE: readonly SuiteTest[] = [
  { name: 'ping', label: 'PING', command: () => 'PING' },
  { name: 'set', label: 'SET', command: () => 'SET __key__ __data__' },
  { name: 'get', label: 'GET', command: () => 'GET __key__' },
  { name: 'incr', label: 'INCR', command: (p) => `INCR ${p}counter:__rand_int__` },
  { name: 'lpush', label: 'LPUSH', command: (p) => `LPUSH ${p}mylist __data__` },
  { name: 'rpush', label: 'RPUSH', command: (p) => `RPUSH ${p}mylist __data__` },
  { name: 'lpop', label: 'LPOP', command: (p) => `LPOP ${p}mylist` },
  { name: 'rpop', label: 'RPOP', command: (p) => `RPOP ${p}mylist` },
  { name: 'sadd', label: 'SADD', command: (p) => `SADD ${p}myset element:__rand_int__` },
  { name: 'hset', label: 'HSET', command: (p) => `HSET ${p}myhash element:__rand_int__ __data__` },
  { name: 'spop', label: 'SPOP', command: (p) => `SPOP ${p}myset` },
  { name: 'zadd', label: 'ZADD', command: (p) => `ZADD ${p}myzset __rand_int__ element:__rand_int__` },
  lrange(100),
  lrange(300),
  lrange(500),
  lrange(600),
  {
    name: 'mset',
    label: 'MSET (10 keys)',
    command: (p) => `MSET __key__ __data__${` ${p}__rand_int__ __data__`.repeat(9)}`,
  },
];

export const SUITE_NAMES = SUITE.map((t) => t.name);

/** `-t set,get,lrange` → the tests in the order given; `lrange` means all four. */
export function parseTests(raw: string): SuiteTest[] {
  const out: SuiteTest[] = [];
  for (const word of raw.split(',').map((w) => w.trim().toLowerCase())) {
    if (word === '') continue;
    const matches = word === 'lrange' ? SUITE.filter((t) => t.name.startsWith('lrange_')) : SUITE.filter((t) => t.name === word);
    if (matches.length === 0) {
      throw new UsageError(`-t/--tests: unknown test "${word}" (known: ${SUITE_NAMES.join(', ')}, lrange)`);
    }
    out.push(...matches);
  }
  if (out.length === 0) throw new UsageError('-t/--tests needs at least one test name');
  return out;
}

/** The suite sets its own commands and modes: flags that would be silently ignored are refused. */
export function checkSuiteFlags(plan: Plan, given: (option: string) => boolean): void {
  for (const flag of ['mode', 'setCmd', 'getCmd', 'verifyGet', 'setRatio']) {
    if (given(flag)) {
      const name = `--${flag.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;
      throw new UsageError(`${name} does not go with -t/--tests (each test has its own command)`);
    }
  }
  // The prefix is pasted into the suite's command text, where the template
  // grammar (docs/workload.md) would split it at a space, unquote it at a
  // quote, refuse a control character, or read a placeholder in `__`
  // (`x_` before `__rand_int__` too).
  const p = plan.keyPrefix;
  if (/[\s"']|__|_$/.test(p) || [...p].some((ch) => refusedOutsideQuotes(ch.codePointAt(0)!))) {
    throw new UsageError(
      `--key-prefix must not contain spaces, quotes, control or invisible characters or "__", nor end in "_", with -t/--tests (got ${shownQuoted(p)})`,
    );
  }
  // Belt and braces: every suite command must parse here, before any engine sees it.
  for (const test of SUITE) {
    try {
      parseTemplate(test.command(p), 'set', true);
    } catch (err) {
      if (err instanceof TemplateError) throw new UsageError(`--key-prefix makes the ${test.name} test's command ${err.message} (got ${shownQuoted(p)})`);
      throw err;
    }
  }
}

/** The Plan of one suite test: the command as a literal template, written as a "set". */
export function planForTest(base: Plan, test: SuiteTest): Plan {
  return {
    ...base,
    mode: 'set',
    setCmd: test.command(base.keyPrefix),
    getCmd: 'GET __key__',
    literalCommands: true,
    verifyGet: false,
    preload: false,
  };
}

export interface SuiteLine {
  test: string;
  label: string;
  result: RunResult;
}

/** Runs the tests in order; LRANGE tests fill their list once first. */
export async function runSuite(
  engine: Engine,
  base: Plan,
  tests: SuiteTest[],
  onLine: (line: SuiteLine) => void,
  options: RunOptions = {},
): Promise<SuiteLine[]> {
  const lines: SuiteLine[] = [];
  let filled = false;
  for (const test of tests) {
    if (test.fill && !filled) {
      const fill = await runPlan(engine, planForTest(base, test.fill), options);
      const line = { test: 'lpush_fill', label: test.fill.label, result: fill };
      lines.push(line);
      onLine(line);
      filled = true;
      if (fill.failure) break;
    }
    const result = await runPlan(engine, planForTest(base, test), options);
    const line = { test: test.name, label: test.label, result };
    lines.push(line);
    onLine(line);
    if (result.failure) break;
  }
  return lines;
}

/** redis-benchmark -q: `SET: 93457.95 requests per second, p50=0.263 msec`. */
export function quietLine(line: SuiteLine): string {
  const r = line.result;
  const p50ms = (r.latencyUs.p50 / 1000).toFixed(3);
  const extra = r.failure ? ` (FAILED: ${printable(r.failure.message)})` : r.errors > 0 ? ` (${r.errors} error replies, first: ${printable(r.firstError ?? '')})` : '';
  return `${line.label}: ${r.opsPerSec.toFixed(2)} requests per second, p50=${p50ms} msec${extra}`;
}

export const CSV_HEADER = '"test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms","errors"';

function ms(us: number): string {
  return (us / 1000).toFixed(3);
}

/** redis-benchmark's --csv columns (p95 from the histogram, plus errors). */
export function csvLine(line: SuiteLine, p95Us: number, minUs: number): string {
  const r = line.result;
  const l = r.latencyUs;
  const cells = [line.label, r.opsPerSec.toFixed(2), ms(l.mean), ms(minUs), ms(l.p50), ms(p95Us), ms(l.p99), ms(l.max), String(r.errors)];
  return cells.map((c) => `"${c.replace(/"/g, '""')}"`).join(',');
}

export interface ComparedLine {
  label: string;
  a: RunResult;
  b: RunResult;
}

/** A table of two targets side by side, B's ops/s as a share of A's. */
export function comparisonTable(rows: ComparedLine[], nameA: string, nameB: string): string {
  const head = ['test', `${nameA} ops/s`, `${nameB} ops/s`, 'B/A', `${nameA} p50 ms`, `${nameB} p50 ms`];
  // Throughput of error replies is not the server's throughput for the command.
  const bad = (x: RunResult) => x.failure !== null || x.errors > 0;
  const note = (x: RunResult) => (x.failure?.kind === 'interrupted' ? ' (interrupted)' : bad(x) ? ' (errors)' : '');
  const body = rows.map((r) => [
    r.label,
    r.a.opsPerSec.toFixed(2) + note(r.a),
    r.b.opsPerSec.toFixed(2) + note(r.b),
    bad(r.a) || bad(r.b) ? 'n/a' : r.a.opsPerSec > 0 ? `${((100 * r.b.opsPerSec) / r.a.opsPerSec).toFixed(1)}%` : '-',
    ms(r.a.latencyUs.p50),
    ms(r.b.latencyUs.p50),
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((b) => b[i].length)));
  const fmt = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i])).join(' | ')} |`;
  return [fmt(head), `| ${widths.map((w) => '-'.repeat(w)).join(' | ')} |`, ...body.map(fmt)].join('\n');
}
