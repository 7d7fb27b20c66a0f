/**
 * The command suite (`-t set,get,incr,...`): redis-benchmark's tests with its
 * meanings, run one after another through the same engines, printed in
 * redis-benchmark's `-q` form, as CSV, or as JSON; and the same suite against
 * two targets side by side with the ratio per test.
 */
import type { Engine, Plan } from './engine-js/plan.js';
import type { RunOptions } from './engine-js/progress.js';
import { runPlan, type RunResult } from './run.js';
import { printable } from './printable.js';
import { UsageError } from './usage-error.js';

export interface SuiteTest {
  /** The name users pass to -t (redis-benchmark's, lower case). */
  name: string;
  /** How redis-benchmark labels the line. */
  label: string;
  /**
   * The command as redis-benchmark 7 sends it; `key` names a key (`mylist`
   * → --key-prefix, empty unless given, a respbench addition, then the name,
   * and under --cluster the hash tag: keyName), `random` whether -r was given.
   */
  command: (key: (name: string) => string, random: boolean) => string;
  /** Read-only commands count as gets (nil replies as misses); the rest as sets. */
  reads?: boolean;
  /** Sent in the inline form (`PING\r\n`), as redis-benchmark's PING_INLINE. */
  inline?: boolean;
  /** Must run first, untimed in the figures of this test (LRANGE needs a list). */
  fill?: SuiteTest;
}

const LRANGE_FILL: SuiteTest = {
  name: 'lpush',
  label: 'LPUSH (needed to benchmark LRANGE)',
  command: (key) => `LPUSH ${key('mylist')} __data__`,
};

function lrange(n: number): SuiteTest {
  return {
    name: `lrange_${n}`,
    label: `LRANGE_${n} (first ${n} elements)`,
    command: (key) => `LRANGE ${key('mylist')} 0 ${n - 1}`,
    reads: true,
    fill: LRANGE_FILL,
  };
}

/**
 * redis-benchmark 7.0's tests, in the order it runs them whatever the order
 * of -t, with its key names: `key:__rand_int__` (12 digits with -r, the
 * literal text without), `counter:__rand_int__`, `mylist`, `myset`,
 * `myhash`, `myzset`. Every `__rand_int__` is its own draw.
 */
export const SUITE: readonly SuiteTest[] = [
  { name: 'ping_inline', label: 'PING_INLINE', command: () => 'PING', inline: true },
  { name: 'ping_mbulk', label: 'PING_MBULK', command: () => 'PING' },
  { name: 'set', label: 'SET', command: (key) => `SET ${key('key')}:__rand_int__ __data__` },
  { name: 'get', label: 'GET', command: (key) => `GET ${key('key')}:__rand_int__`, reads: true },
  { name: 'incr', label: 'INCR', command: (key) => `INCR ${key('counter')}:__rand_int__` },
  { name: 'lpush', label: 'LPUSH', command: (key) => `LPUSH ${key('mylist')} __data__` },
  { name: 'rpush', label: 'RPUSH', command: (key) => `RPUSH ${key('mylist')} __data__` },
  { name: 'lpop', label: 'LPOP', command: (key) => `LPOP ${key('mylist')}` },
  { name: 'rpop', label: 'RPOP', command: (key) => `RPOP ${key('mylist')}` },
  { name: 'sadd', label: 'SADD', command: (key) => `SADD ${key('myset')} element:__rand_int__` },
  { name: 'hset', label: 'HSET', command: (key) => `HSET ${key('myhash')} element:__rand_int__ __data__` },
  { name: 'spop', label: 'SPOP', command: (key) => `SPOP ${key('myset')}` },
  // Without -r redis-benchmark's score is 0; with it, a draw of its own.
  { name: 'zadd', label: 'ZADD', command: (key, random) => `ZADD ${key('myzset')} ${random ? '__rand_int__' : '0'} element:__rand_int__` },
  { name: 'zpopmin', label: 'ZPOPMIN', command: (key) => `ZPOPMIN ${key('myzset')}` },
  lrange(100),
  lrange(300),
  lrange(500),
  lrange(600),
  {
    name: 'mset',
    label: 'MSET (10 keys)',
    command: (key) => `MSET${` ${key('key')}:__rand_int__ __data__`.repeat(10)}`,
  },
];

export const SUITE_NAMES = SUITE.map((t) => t.name);

/** Names that select several tests, as in redis-benchmark. */
const GROUPS: Record<string, (t: SuiteTest) => boolean> = {
  ping: (t) => t.name.startsWith('ping_'),
  lrange: (t) => t.name.startsWith('lrange_'),
};

/**
 * `-t get,set,lrange` → the selected tests in redis-benchmark's fixed order
 * (SET before GET whatever the order given); `ping` is both PING tests,
 * `lrange` all four LRANGE tests.
 */
export function parseTests(raw: string): SuiteTest[] {
  const selected = new Set<string>();
  for (const word of raw.split(',').map((w) => w.trim().toLowerCase())) {
    if (word === '') continue;
    const group = GROUPS[word];
    const matches = group ? SUITE.filter(group) : SUITE.filter((t) => t.name === word);
    if (matches.length === 0) {
      throw new UsageError(`-t/--tests: unknown test "${word}" (known: ${SUITE_NAMES.join(', ')}, ${Object.keys(GROUPS).join(', ')})`);
    }
    for (const t of matches) selected.add(t.name);
  }
  if (selected.size === 0) throw new UsageError('-t/--tests needs at least one test name');
  return SUITE.filter((t) => selected.has(t.name));
}

/** The flags -t and a command on the line take redis-benchmark's defaults for, and those defaults. */
export const BENCHMARK_DEFAULTS = { connections: 50, pipeline: 1, requests: 100_000, valueSize: 3 } as const;

/**
 * redis-benchmark's habits for -t and a command on the line: its defaults
 * (-c 50 -P 1 -n 100000 -d 3) for what the command line leaves out, no key
 * prefix unless given, and without -r every `__rand_int__` stays the text
 * `__rand_int__` (one key per command, as redis-benchmark).
 */
export function withBenchmarkDefaults(plan: Plan, given: (option: string) => boolean): Plan {
  const out = { ...plan, randIntLiteral: !given('keyspace') };
  if (!given('connections')) out.connections = BENCHMARK_DEFAULTS.connections;
  if (!given('pipeline')) out.pipeline = BENCHMARK_DEFAULTS.pipeline;
  // redis-benchmark's -P N sends N and waits for all N: its figures mean that.
  if (!given('pipelineMode')) out.pipelineMode = 'batch';
  if (!given('requests')) out.requests = BENCHMARK_DEFAULTS.requests;
  if (!given('valueSize')) out.valueSizeMin = out.valueSizeMax = BENCHMARK_DEFAULTS.valueSize;
  if (!given('keyPrefix')) out.keyPrefix = '';
  return out;
}

/**
 * Each test draws its own numbers, as redis-benchmark's one random stream
 * runs on from test to test: GET does not re-read exactly the keys SET
 * wrote. The seed of test `i` (its place in SUITE) is derived from the run's.
 */
export function seedForTest(seed: number, test: SuiteTest): number {
  const found = SUITE.findIndex((t) => t.name === test.name && t.label === test.label);
  const i = found >= 0 ? found : SUITE.length; // the LRANGE fill
  return (seed + Math.imul(i + 1, 0x9e3779b9)) >>> 0;
}

/**
 * A suite key's name: --key-prefix, the name, and under --cluster the hash
 * tag redis-benchmark --cluster puts there (`key:{tag}:__rand_int__`,
 * `mylist:{tag}`). Ours is `{__tag__}`, the request's key draw in decimal,
 * so each request's keys share one slot (MSET's ten keys too) and the
 * requests spread over the slots, each sent to the primary that owns its
 * slot; a MOVED request keeps its key draw, so its tag and slot.
 */
export function keyName(prefix: string, clustered: boolean): (name: string) => string {
  return (name) => `${prefix}${name}${clustered ? ':{__tag__}' : ''}`;
}

/** The Plan of one suite test: the command as a literal template, a read (get) or a write (set). */
export function planForTest(base: Plan, test: SuiteTest): Plan {
  const command = test.command(keyName(base.keyPrefix, Boolean(base.cluster)), !base.randIntLiteral);
  // The command fills both templates; the mode says which one runs and how its replies count.
  return {
    ...base,
    mode: test.reads ? 'get' : 'set',
    setCmd: command,
    getCmd: command,
    literalCommands: true,
    inlineCommands: test.inline === true,
    verifyGet: false,
    preload: false,
    seed: seedForTest(base.seed, test),
  };
}

/** The command a command-line benchmark (`respbench INCR counter:__rand_int__`) sends: its words, as redis-benchmark takes them (checkCommandWords checked them). */
export function planForCommand(base: Plan, words: readonly string[]): Plan {
  const command = words.join(' ');
  return { ...base, mode: 'set', setCmd: command, getCmd: command, literalCommands: true, verifyGet: false, preload: false };
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

/** Every reply was an error reply: no rate to show, it would not be the command's. */
export function allErrors(r: RunResult): boolean {
  return r.requests > 0 && r.errors === r.requests;
}

/**
 * redis-benchmark -q: `SET: 93457.95 requests per second, p50=0.263 msec`.
 * A failed test says only FAILED and its kind here: its reason goes to
 * stderr once (suite-output.ts reportProblems).
 */
export function quietLine(line: Pick<SuiteLine, 'label' | 'result'>, msecDecimals = 3): string {
  const r = line.result;
  if (allErrors(r)) return `${line.label}: all ${r.errors} replies were errors, first: ${printable(r.firstError ?? '')}${r.failure ? ` (FAILED: ${r.failure.kind})` : ''}`;
  const extra = r.failure ? ` (FAILED: ${r.failure.kind})` : r.errors > 0 ? ` (${r.errors} error replies, first: ${printable(r.firstError ?? '')})` : '';
  return `${rateLine(line.label, r.opsPerSec, r.latencyUs.p50, msecDecimals)}${extra}`;
}

/** redis-benchmark -q's figures: `SET: 93457.95 requests per second, p50=0.263 msec`. */
export function rateLine(label: string, opsPerSec: number, p50Us: number, msecDecimals = 3): string {
  return `${label}: ${opsPerSec.toFixed(2)} requests per second, p50=${(p50Us / 1000).toFixed(msecDecimals)} msec`;
}

export const CSV_HEADER = '"test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms","errors"';

function ms(us: number): string {
  return (us / 1000).toFixed(3);
}

/** redis-benchmark's --csv columns (p95 from the histogram, plus errors). */
export function csvLine(line: SuiteLine, p95Us: number, minUs: number): string {
  const r = line.result;
  const l = r.latencyUs;
  // A test whose replies were all errors has no rate (empty cell); the errors column says why.
  const rps = allErrors(r) ? '' : r.opsPerSec.toFixed(2);
  const cells = [line.label, rps, ms(l.mean), ms(minUs), ms(l.p50), ms(p95Us), ms(l.p99), ms(l.max), String(r.errors)];
  return cells.map((c) => `"${c.replace(/"/g, '""')}"`).join(',');
}

export interface ComparedLine {
  label: string;
  a: RunResult;
  b: RunResult;
}

/**
 * `this` as a percentage of `baseline`, the direction every ratio in
 * respbench takes (the study's "vs baseline" too): 70% means this target
 * reached 70% of the baseline's throughput.
 */
export function percentOf(value: number, baseline: number): string {
  return baseline > 0 ? `${((100 * value) / baseline).toFixed(1)}%` : '-';
}

/**
 * A table of two targets side by side: `nameA` is the target measured, `nameB`
 * the one it is compared with (--compare), and the ratio is A's ops/s as a
 * percentage of B's, headed "A vs B".
 */
export function comparisonTable(rows: ComparedLine[], nameA: string, nameB: string): string {
  const head = ['test', `${nameA} ops/s`, `${nameB} ops/s`, `${nameA} vs ${nameB}`, `${nameA} p50 ms`, `${nameB} p50 ms`];
  // Throughput of error replies is not the server's throughput for the command.
  const bad = (x: RunResult) => x.failure !== null || x.errors > 0;
  const note = (x: RunResult) => (x.failure?.kind === 'interrupted' ? ' (interrupted)' : bad(x) ? ' (errors)' : '');
  const rate = (x: RunResult) => (allErrors(x) ? 'all errors' : x.opsPerSec.toFixed(2) + note(x));
  const body = rows.map((r) => [
    r.label,
    rate(r.a),
    rate(r.b),
    bad(r.a) || bad(r.b) ? 'n/a' : percentOf(r.a.opsPerSec, r.b.opsPerSec),
    allErrors(r.a) ? '-' : ms(r.a.latencyUs.p50),
    allErrors(r.b) ? '-' : ms(r.b.latencyUs.p50),
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((b) => b[i].length)));
  const fmt = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i])).join(' | ')} |`;
  return [fmt(head), `| ${widths.map((w) => '-'.repeat(w)).join(' | ')} |`, ...body.map(fmt)].join('\n');
}
