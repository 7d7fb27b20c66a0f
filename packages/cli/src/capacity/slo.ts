/**
 * A latency SLO as `respbench capacity --slo` takes it: conditions on any
 * percentile of the intended-time latency, comma-separated, and at most one
 * bound on the share of error replies: `p99<=1ms`, `p99<=1ms,p99.9<=5ms`,
 * `p50<=200us,errors<=0.1%`. Without an `errors` condition no error reply
 * is allowed (a server that answers -ERR fast has no capacity to speak of).
 */
import { shownQuoted } from '../printable.js';
import { UsageError } from '../usage-error.js';
import { DURATION_FORMS, parseDurationNs } from '../flag-values.js';

export interface PercentileCondition {
  /** 0 < percentile <= 100 (100 is the maximum). */
  percentile: number;
  /** How the user wrote it: `p99.9`. */
  name: string;
  /** The bound, in microseconds. */
  maxUs: number;
}

export interface Slo {
  latency: PercentileCondition[];
  /** Highest share of requests answered with an error reply, 0..1. */
  maxErrorShare: number;
  /** Whether `errors<=` was given (else the default, none). */
  errorsGiven: boolean;
}

const FORMS = `conditions like 'p99<=1ms', joined by commas ('p99<=1ms,p99.9<=5ms'), and optionally 'errors<=0.1%'; latency bounds are durations (${DURATION_FORMS})`;

/**
 * One condition of any gate, as written: a figure (`ops`, `errors`, `p99`,
 * `p99.9`), a comparison, and a value — a latency (`1ms`), a rate
 * (`100000`), a share (`errors<=0.1%`) or, with a sign, a change against a
 * baseline (`ops<-5%`, `p99>+10%`). The one grammar of capacity's and
 * study's `--slo`, a run's and a suite's `--slo` and compare's `--fail-if`
 * (gates.ts); each takes the kinds it means.
 */
export interface Condition {
  /** `ops`, `errors`, or a percentile's name as written (`p99.9`). */
  figure: string;
  /** The percentile (0 < p <= 100) when the figure is one. */
  percentile: number | null;
  op: '<=' | '>=' | '<' | '>';
  kind: 'latency' | 'rate' | 'share' | 'change';
  /** us for a latency, ops/s for a rate, 0..1 for a share, the change as a fraction (+0.1 = +10%). */
  value: number;
  /** As written, spaces taken out. */
  text: string;
}

/** One condition read; null when it does not follow the grammar. */
export function parseCondition(text: string): Condition | null {
  const m = /^(ops|errors|p(\d+(?:\.\d+)?))(<=|>=|<|>)([+-])?(\d+(?:\.\d+)?)(us|µs|ms|s|%)?$/i.exec(text);
  if (!m) return null;
  const [, figureText, pText, op, sign, number, unitText] = m;
  const figure = figureText.toLowerCase();
  const unit = unitText?.toLowerCase();
  const percentile = pText === undefined ? null : Number(pText);
  const magnitude = Number(number);
  const base = { figure: percentile === null ? figure : `p${pText}`, percentile, op: op as Condition['op'], text };
  if (sign !== undefined) return unit === '%' && figure !== 'errors' ? { ...base, kind: 'change', value: (sign === '-' ? -magnitude : magnitude) / 100 } : null;
  if (percentile !== null) return unit && unit !== '%' ? { ...base, kind: 'latency', value: latencyUs(`${number}${unit}`) } : null;
  if (figure === 'errors') return unit === '%' ? { ...base, kind: 'share', value: magnitude / 100 } : null;
  return unit === undefined ? { ...base, kind: 'rate', value: magnitude } : null;
}

/** A latency bound in us, read with the one duration grammar (flag-values.ts). */
function latencyUs(text: string): number {
  return parseDurationNs('a latency bound', text, { allowZero: true }) / 1000;
}

/** The comma-separated conditions of a flag, spaces taken out; empty parts dropped. */
export function conditionParts(raw: string): string[] {
  return String(raw)
    .split(',')
    .map((p) => p.replace(/\s+/g, ''))
    .filter((p) => p !== '');
}

export function parseSlo(raw: string, flag = '--slo'): Slo {
  const bad = (why: string) => new UsageError(`${flag} takes ${FORMS}: ${why} (got ${shownQuoted(raw)})`);
  const latency: PercentileCondition[] = [];
  let maxErrorShare: number | null = null;
  const parts = conditionParts(raw);
  if (parts.length === 0) throw bad('no condition');
  for (const part of parts) {
    const c = parseCondition(part);
    if (c?.kind === 'share' && c.op === '<=') {
      if (maxErrorShare !== null) throw bad('errors given twice');
      if (c.value > 1) throw bad('an error share is at most 100%');
      maxErrorShare = c.value;
      continue;
    }
    // A capacity SLO bounds latency from above: `p99<=1ms`.
    // A latency bound is a duration: a bare number has no unit (the one duration grammar, flag-values.ts).
    const bare = /^(p\d+(?:\.\d+)?<=)(\d+(?:\.\d+)?)$/i.exec(part);
    if (bare) throw bad(`${bare[1]}${bare[2]}: a bare number has no unit; write ${bare[1]}${bare[2]}ms or ${bare[1]}${bare[2]}us`);
    if (!c || c.kind !== 'latency' || c.op !== '<=') throw bad(`cannot read ${shownQuoted(part)}`);
    const percentile = c.percentile!;
    if (!(percentile > 0 && percentile <= 100)) throw bad(`a percentile is above 0 and at most 100 (${c.figure})`);
    if (!(c.value > 0)) throw bad('a latency bound must be above 0');
    if (latency.some((x) => x.percentile === percentile)) throw bad(`${c.figure} given twice`);
    latency.push({ percentile, name: c.figure, maxUs: c.value });
  }
  if (latency.length === 0) throw bad('at least one latency condition is needed');
  latency.sort((a, b) => a.percentile - b.percentile);
  return { latency, maxErrorShare: maxErrorShare ?? 0, errorsGiven: maxErrorShare !== null };
}

/** `12 us`, `1.5 ms`, `2 s`: a latency for people. */
export function formatUs(us: number): string {
  const trim = (n: number) => String(Number(n.toPrecision(4)));
  if (us >= 1_000_000) return `${trim(us / 1_000_000)} s`;
  if (us >= 1000) return `${trim(us / 1000)} ms`;
  return `${trim(us)} us`;
}

function formatShare(share: number): string {
  return `${Number((share * 100).toPrecision(4))}%`;
}

/** `p99 <= 1 ms, p99.9 <= 5 ms, errors <= 0.1%` (the default error bound said as such). */
export function describeSlo(slo: Slo): string {
  const parts = slo.latency.map((c) => `${c.name} <= ${formatUs(c.maxUs)}`);
  parts.push(`errors <= ${formatShare(slo.maxErrorShare)}${slo.errorsGiven ? '' : ' (default)'}`);
  return parts.join(', ');
}

export { formatShare };
