/**
 * Gates that fail a CI job: `--slo` on a run or a `-t` suite (each command
 * or test must meet every condition: `p99<=1ms,ops>=100000,errors<=0.1%`)
 * and compare's `--fail-if` (a change against the baseline that fails:
 * `ops<-5%,p99>+10%`). One grammar (capacity/slo.ts parseCondition); the
 * result is a case per command or test with a line per missed figure,
 * which the terminal, --junit and --markdown all show; exit 5 when any
 * case missed.
 */
import { conditionParts, formatShare, formatUs, parseCondition, type Condition } from './capacity/slo.js';
import type { Comparison } from './compare/compare.js';
import { commandHistogram } from './compare/figures.js';
import { percentilesUsOf, type RunResult } from './run.js';
import { printable, shownQuoted } from './printable.js';
import type { SuiteLine } from './suite.js';
import { UsageError } from './usage-error.js';

/** One command, test or compared row, and the gate lines it missed (none: it passed). */
export interface GateCase {
  name: string;
  /** The figures as measured (or, for compare, NEW as % of BASE), for the Markdown table. */
  figures: Record<string, number>;
  missed: string[];
  /** Seconds it measured (the JUnit testcase's time). */
  seconds: number;
}

const SLO_FORMS = "conditions like 'p99<=1ms', 'ops>=100000', 'errors<=0.1%', joined by commas; latency units us, ms or s";
const FAIL_IF_FORMS = "changes against the baseline that fail, like 'ops<-5%' or 'p99>+10%', joined by commas";

function parseGate(raw: string, flag: string, forms: string, takes: (c: Condition) => boolean): Condition[] {
  const bad = (why: string) => new UsageError(`${flag} takes ${forms}: ${why} (got ${shownQuoted(raw)})`);
  const parts = conditionParts(raw);
  if (parts.length === 0) throw bad('no condition');
  return parts.map((part) => {
    const c = parseCondition(part);
    if (!c || !takes(c)) throw bad(`cannot read ${shownQuoted(part)}`);
    if (c.percentile !== null && !(c.percentile > 0 && c.percentile <= 100)) throw bad(`a percentile is above 0 and at most 100 (${c.figure})`);
    return c;
  });
}

/** A run's or suite's --slo: absolute bounds (latency, ops/s, error share). */
export function parseRunSlo(raw: string, flag = '--slo'): Condition[] {
  return parseGate(raw, flag, SLO_FORMS, (c) => c.kind !== 'change');
}

/** compare's --fail-if: changes (ops or a percentile) that fail. */
export function parseFailIf(raw: string, flag = '--fail-if'): Condition[] {
  return parseGate(raw, flag, FAIL_IF_FORMS, (c) => c.kind === 'change');
}

function holds(value: number, c: Condition): boolean {
  switch (c.op) {
    case '<=':
      return value <= c.value;
    case '>=':
      return value >= c.value;
    case '<':
      return value < c.value;
    case '>':
      return value > c.value;
  }
}

function shownValue(value: number, c: Condition): string {
  if (c.kind === 'latency') return formatUs(value);
  if (c.kind === 'share') return formatShare(value);
  if (c.kind === 'change') return `${value >= 0 ? '+' : ''}${(value * 100).toFixed(1)}%`;
  return `${value.toFixed(0)} ops/s`;
}

/** Each command row of a run (then Totals) against the SLO: latency and ops per row, errors on Totals. */
export function runGateCases(r: RunResult, conditions: Condition[], name = (row: string) => row): GateCase[] {
  const totals = r.perCommand.length - 1;
  return r.perCommand.map((row, k) => {
    const histogram = k === totals ? r.histogram : commandHistogram(r, r, k);
    const figures: Record<string, number> = { ops: row.opsPerSec, ...row.percentilesUs };
    const missed: string[] = [];
    for (const c of conditions) {
      let value: number;
      if (c.kind === 'rate') value = row.opsPerSec;
      else if (c.kind === 'share') {
        // Error replies are counted for the run, not per command.
        if (k !== totals) continue;
        value = r.requests > 0 ? r.errors / r.requests : 0;
      } else value = row.percentilesUs[c.figure] ?? percentilesUsOf(histogram, [c.percentile!])[`p${c.percentile}`];
      figures[c.figure] = value;
      if (!holds(value, c)) missed.push(`${printable(name(row.command))} ${c.figure} ${shownValue(value, c)} misses the SLO ${c.text}`);
    }
    return { name: name(row.command), figures, missed, seconds: r.elapsedSec ?? 0 };
  });
}

/** Each test of a -t suite (its Totals) against the SLO. */
export function suiteGateCases(lines: SuiteLine[], conditions: Condition[]): GateCase[] {
  return lines
    .filter((line) => line.test !== 'lpush_fill')
    .map((line) => {
      const cases = runGateCases(line.result, conditions, () => line.label);
      return cases[cases.length - 1];
    });
}

/**
 * Each compared row against --fail-if: a figure fails when its change
 * crosses the bound and the noise does not explain it (verdict not
 * "within noise"; with no estimate of the noise, the change alone decides).
 */
export function compareGateCases(c: Comparison, conditions: Condition[]): GateCase[] {
  const rows = [...new Set(c.figures.map((f) => f.row))];
  return rows.map((row) => {
    const figures: Record<string, number> = {};
    const missed: string[] = [];
    for (const f of c.figures.filter((x) => x.row === row)) {
      if (f.percent !== null) figures[f.figure] = f.percent;
      for (const cond of conditions) {
        if (cond.figure !== f.figure || f.percent === null) continue;
        const change = f.percent / 100 - 1;
        if (holds(change, cond) && f.verdict !== 'within noise') {
          const of = (v: number) => (f.figure === 'ops' ? `${v.toFixed(0)} ops/s` : formatUs(v));
          missed.push(`${printable(row)} ${f.figure} ${shownValue(change, cond)} (NEW ${of(f.next)} vs BASE ${of(f.base)}, ${f.verdict}) fails ${cond.text}`);
        }
      }
    }
    return { name: row, figures, missed, seconds: 0 };
  });
}

/** The lines to print, one per missed figure. */
export function missedLines(cases: GateCase[]): string[] {
  return cases.flatMap((c) => c.missed);
}
