/**
 * What `respbench compare` reads: any result respbench writes — a run's or
 * a merge's `--json` (either file form, result-json.ts), a `-t` suite's
 * JSON, a capacity search's JSON, a study's summary CSV — as one shape: rows
 * (per command, or per test, then Totals) of figures (`ops` = ops/s and the
 * percentiles, us), each row with the units its noise is estimated from
 * (rounds, else the run's intervals), and the workload to check the two
 * results against each other.
 */
import { readFileSync } from 'node:fs';
import { parse as parseCsv } from 'csv-parse/sync';
import { addBuckets, totalOf } from '../buckets.js';
import type { HistogramData } from '../engine-js/histogram.js';
import type { RawInterval } from '../engine-js/plan.js';
import { printable } from '../printable.js';
import { readResultJson } from '../result-json.js';
import type { RunResult } from '../run.js';
import { foldShortTail } from '../series.js';
import { UsageError } from '../usage-error.js';
import type { Block, Units } from './noise.js';

export type ComparableKind = 'run' | 'suite' | 'capacity' | 'study';

export interface ComparableRow {
  /** The command (`SET`, `Totals`), the -t test's label, or the study scenario's. */
  name: string;
  /** `ops` (ops/s) and percentiles (`p50`, `p99.9`), us. */
  figures: Record<string, number>;
  units: Units | null;
}

export interface Comparable {
  file: string;
  kind: ComparableKind;
  rows: ComparableRow[];
  /** The Plan the figures come from (the first test's for a suite); null for a study CSV. */
  plan: Record<string, unknown> | null;
  engine: string | null;
  hostname: string | null;
  /** A capacity search: the highest rate that met the SLO and the lowest that did not. */
  bracket?: { met: number | null; failed: number | null };
  /** What the file said about itself, for the header line. */
  summary: string;
}

/** Each round's figures of a `-x N` run: per command as perCommand. */
export interface RoundFigures {
  perCommand: { command: string; opsPerSec: number; percentilesUs: Record<string, number> }[];
}

function figuresOf(opsPerSec: number, percentilesUs: Record<string, number> | undefined): Record<string, number> {
  return { ops: opsPerSec, ...(percentilesUs ?? {}) };
}

type Buckets = HistogramData['buckets'];
const NONE: HistogramData = { unit: 'ns', significantDigits: 3, buckets: [] };

/** Histograms per op kind and per command, as a whole run and each of its intervals hold them. */
export type HistogramHolder = Pick<RawInterval, 'commandHistograms'> & { setHistogram?: HistogramData; getHistogram?: HistogramData };

/** The histogram of row `k` of a run's perCommand (the command rows, then Totals) in `holder` (the run, or one interval). */
export function commandHistogram(r: RunResult, holder: HistogramHolder, k: number): HistogramData {
  const commands = r.perCommand.length - 1;
  const set = holder.setHistogram ?? NONE;
  const get = holder.getHistogram ?? NONE;
  if (k === commands) {
    // Totals: every command's.
    const parts = holder.commandHistograms ?? [set, get];
    return { ...NONE, buckets: parts.reduce((s, h) => addBuckets(s, h.buckets), [] as Buckets) };
  }
  if (holder.commandHistograms) return holder.commandHistograms[k] ?? NONE;
  // --mode: SET then GET rows, as the mode sends them.
  const mode = r.plan.mode;
  const side = mode === 'get' ? 'get' : mode === 'set' ? 'set' : k === 0 ? 'set' : 'get';
  return side === 'set' ? set : get;
}

function runUnits(r: RunResult, k: number): Units | null {
  const rounds = (r as RunResult & { rounds?: RoundFigures[] }).rounds;
  if (rounds && rounds.length > 0) {
    const name = r.perCommand[k].command;
    return { kind: 'rounds', values: rounds.map((round) => { const c = round.perCommand.find((x) => x.command === name); return c ? figuresOf(c.opsPerSec, c.percentilesUs) : {}; }) };
  }
  const intervals = foldShortTail(r.intervals ?? []);
  if (intervals.length === 0) return null;
  const blocks: Block[] = intervals.map((i) => {
    const buckets = commandHistogram(r, i, k).buckets;
    return { requests: totalOf(buckets), durationSec: Math.max(0, i.endNs - i.startNs) / 1e9, buckets };
  });
  return { kind: 'intervals', blocks };
}

function isRunResult(v: unknown): v is RunResult {
  const r = v as RunResult;
  return typeof r === 'object' && r !== null && typeof r.plan === 'object' && Array.isArray(r.perCommand) && typeof r.requests === 'number';
}

function fromRun(file: string, r: RunResult): Comparable {
  if (r.opsPerSec === null) throw new UsageError(`${printable(file)} measured nothing (its run never got a reply): nothing to compare`);
  const rows = r.perCommand.map((c, k) => ({ name: c.command, figures: figuresOf(c.opsPerSec, c.percentilesUs), units: runUnits(r, k) }));
  const merged = (r as RunResult & { merged?: { files: string[] } }).merged;
  const rounds = (r as RunResult & { rounds?: RoundFigures[] }).rounds;
  const what = merged ? `merge of ${merged.files.length} results` : rounds ? `${rounds.length} rounds (-x)` : 'run';
  return { file, kind: 'run', rows, plan: r.plan as unknown as Record<string, unknown>, engine: r.engine, hostname: r.meta?.hostname ?? null, summary: `${what}, ${r.engine} engine` };
}

function fromSuite(file: string, lines: { label: string; result: RunResult }[]): Comparable {
  const rows = lines.map((line) => {
    const r = line.result;
    if (!isRunResult(r) || r.opsPerSec === null) throw new UsageError(`${printable(file)}: test ${printable(String(line.label))} has no figures (it never got a reply)`);
    const totals = r.perCommand.length - 1;
    return { name: line.label, figures: figuresOf(r.opsPerSec, r.perCommand[totals].percentilesUs), units: runUnits(r, totals) };
  });
  const first = lines[0]?.result;
  const { setCmd: _s, getCmd: _g, commands: _c, ...plan } = (first?.plan ?? {}) as unknown as Record<string, unknown>;
  return { file, kind: 'suite', rows, plan, engine: first?.engine ?? null, hostname: first?.meta?.hostname ?? null, summary: `-t suite of ${lines.length} tests, ${first?.engine ?? '?'} engine` };
}

function fromCapacity(file: string, r: { capacity: number | null; bracket: { met: number | null; failed: number | null }; plan: Record<string, unknown>; engine: string; slo: { text: string } }): Comparable {
  if (r.capacity === null) throw new UsageError(`${printable(file)}: the search found no capacity (no rate met its SLO): nothing to compare`);
  const { rate: _r, durationMs: _d, requests: _n, ...plan } = r.plan;
  return { file, kind: 'capacity', rows: [{ name: `capacity (${r.slo.text})`, figures: { ops: r.capacity }, units: null }], plan: { ...plan, slo: r.slo.text }, engine: r.engine, hostname: null, bracket: r.bracket, summary: `capacity search, ${r.engine} engine` };
}

/** A summary CSV's percentile column (`p50_us`, `p999_us`, `p99.9_us`) as a figure name (`p50`, `p99.9`); null otherwise. */
function percentileColumn(column: string): string | null {
  const m = /^p(\d+(?:\.\d+)?)_us$/.exec(column);
  if (!m) return null;
  const digits = m[1];
  return digits.includes('.') || digits.length <= 2 ? `p${digits}` : `p${digits.slice(0, 2)}.${digits.slice(2)}`;
}

function fromStudyCsv(file: string, text: string): Comparable {
  let records: Record<string, string>[];
  try {
    records = parseCsv(text, { columns: true, skip_empty_lines: true });
  } catch (err) {
    throw new UsageError(`${printable(file)} is not CSV: ${(err as Error).message}`);
  }
  if (records.length === 0 || !('mean_ops_per_sec' in records[0]) || !('label' in records[0])) {
    throw new UsageError(`${printable(file)} is not a study's summary CSV (no label and mean_ops_per_sec columns)`);
  }
  const columns = Object.keys(records[0]);
  const roundColumns = columns.filter((c) => /^round\d+_ops_per_sec$/.test(c));
  const latency = columns.map((c) => [c, percentileColumn(c)] as const).filter((x): x is readonly [string, string] => x[1] !== null);
  const rows = records.map((rec) => {
    const name = rec.command && rec.command !== 'Totals' ? `${rec.label} ${rec.command}` : rec.label;
    const figures: Record<string, number> = { ops: Number(rec.mean_ops_per_sec) };
    for (const [col, figure] of latency) if (rec[col] !== '') figures[figure] = Number(rec[col]);
    // The summary keeps each round's ops/s, not its latency: the rounds' spread speaks for ops/s only.
    const values = roundColumns.map((c) => rec[c]).filter((v) => v !== '' && v !== undefined).map((v) => ({ ops: Number(v) }));
    return { name, figures, units: values.length > 0 ? ({ kind: 'rounds', values } as Units) : null };
  });
  const mode = [...new Set(records.map((r) => r.mode))].join(',');
  return { file, kind: 'study', rows, plan: { mode }, engine: null, hostname: null, summary: `study summary of ${rows.length} rows` };
}

/** Reads one file compare takes; anything else: a usage error naming the file and what it takes. */
export function readComparable(file: string): Comparable {
  if (/\.csv$/i.test(file)) {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (err) {
      throw new UsageError(`cannot read ${printable(file)}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    }
    return fromStudyCsv(file, text);
  }
  const takes = "give respbench's --json of a run, a merge, a -t suite or a capacity search, or a study's summary CSV";
  const v = readResultJson(file, takes) as Record<string, unknown>;
  if (isRunResult(v)) return fromRun(file, v);
  if (Array.isArray(v) && v.length > 0 && v.every((x) => x && typeof x === 'object' && 'label' in x && 'result' in x)) return fromSuite(file, v as { label: string; result: RunResult }[]);
  if (v && Array.isArray((v as { a?: unknown }).a)) return fromSuite(file, (v as { a: { label: string; result: RunResult }[] }).a);
  if (v && v.kind === 'capacity') return fromCapacity(file, v as never);
  throw new UsageError(`${printable(file)} is not a result compare reads: ${takes}`);
}
