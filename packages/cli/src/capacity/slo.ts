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

export function parseSlo(raw: string, flag = '--slo'): Slo {
  const bad = (why: string) => new UsageError(`${flag} takes ${FORMS}: ${why} (got ${shownQuoted(raw)})`);
  const latency: PercentileCondition[] = [];
  let maxErrorShare: number | null = null;
  const parts = String(raw)
    .split(',')
    .map((p) => p.replace(/\s+/g, ''))
    .filter((p) => p !== '');
  if (parts.length === 0) throw bad('no condition');
  for (const part of parts) {
    const errors = /^errors<=(\d+(?:\.\d+)?)%$/i.exec(part);
    if (errors) {
      if (maxErrorShare !== null) throw bad('errors given twice');
      const pct = Number(errors[1]);
      if (pct > 100) throw bad('an error share is at most 100%');
      maxErrorShare = pct / 100;
      continue;
    }
    const m = /^p(\d+(?:\.\d+)?)<=(.+)$/i.exec(part);
    if (!m) throw bad(`cannot read ${shownQuoted(part)}`);
    const percentile = Number(m[1]);
    if (!(percentile > 0 && percentile <= 100)) throw bad(`a percentile is above 0 and at most 100 (p${m[1]})`);
    let maxUs: number;
    try {
      maxUs = parseDurationNs(`the bound of p${m[1]}`, m[2], { allowZero: false }) / 1000;
    } catch (err) {
      throw bad((err as Error).message);
    }
    if (latency.some((c) => c.percentile === percentile)) throw bad(`p${m[1]} given twice`);
    latency.push({ percentile, name: `p${m[1]}`, maxUs });
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
