/**
 * The live figures `--metrics-listen` serves: counters, gauges and a latency
 * histogram fed from the intervals the engines already cut (RunOptions
 * onInterval), never from the hot path. When a run ends its totals are
 * squared with the result, so a last scrape sees exactly the run's counts.
 * Every run of a session (a suite's tests, a capacity search's steps, a
 * study's rounds) adds to the same counters: they only grow, as Prometheus
 * expects.
 */
import type { HistogramData } from '../engine-js/histogram.js';
import { localConnections, type Plan, type RawInterval } from '../engine-js/plan.js';
import { commandHistograms, type RunResult } from '../run.js';
import { DURATION_BUCKETS_SECONDS, FAMILIES, LAG_QUANTILES, type Family, type Outcome } from './families.js';

export type Labels = Readonly<Record<string, string>>;

interface Series {
  labels: Labels;
  value: number;
}

interface HistogramSeries {
  labels: Labels;
  /** Per bucket of DURATION_BUCKETS_SECONDS, then +Inf: not cumulative. */
  counts: number[];
  sumSeconds: number;
}

/** What an interval or a whole run counted, by the families' fields. */
interface Counts {
  outcomes: Record<Outcome, number>;
  bytesOut: number;
  bytesIn: number;
  /** Per command: latencies, in DURATION_BUCKETS_SECONDS' buckets. */
  durations: Map<string, { counts: number[]; sumSeconds: number }>;
}

function labelKey(labels: Labels): string {
  return Object.keys(labels)
    .sort()
    .map((k) => `${k}=${labels[k]}`)
    .join('\u0000');
}

/** Index of the first bucket whose upper bound holds `seconds` (+Inf last). */
function bucketOf(seconds: number): number {
  let lo = 0;
  let hi = DURATION_BUCKETS_SECONDS.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (seconds <= DURATION_BUCKETS_SECONDS[mid]) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

/** An HDR histogram (ns, lowest equivalent values) folded into the classic buckets. */
export function foldDurations(data: HistogramData): { counts: number[]; sumSeconds: number } {
  const counts = new Array<number>(DURATION_BUCKETS_SECONDS.length + 1).fill(0);
  let sumSeconds = 0;
  for (const [ns, count] of data.buckets) {
    counts[bucketOf(ns / 1e9)] += count;
    sumSeconds += (ns / 1e9) * count;
  }
  return { counts, sumSeconds };
}

/** Outcomes from an engine's counts: disjoint, so they add up to `requests` (lost apart). */
export function outcomesOf(c: { requests: number; errors: number; misses: number; mismatches: number; lostWrites: number; lost?: number }): Record<Outcome, number> {
  const notOk = c.errors + c.misses + c.mismatches + c.lostWrites;
  return { ok: Math.max(0, c.requests - notOk), error: c.errors, miss: c.misses, mismatch: c.mismatches, lost_write: c.lostWrites, lost: c.lost ?? 0 };
}

/** The labels of a run's series: the target, the engine, the load machine. */
export function runLabels(plan: Plan, engine: string): Labels {
  const target = plan.socket ?? `${plan.host}:${plan.port}`;
  return { target, engine, client_index: String(plan.clientIndex ?? 0), node: plan.cluster ? 'all' : target };
}

/** What one interval (or the end of a run) added: what --statsd pushes. */
export interface Published {
  /** The run's labels and the command label of its outcomes ("all" for several commands). */
  labels: Labels;
  command: string;
  outcomes: Record<Outcome, number>;
  bytesOut: number;
  bytesIn: number;
  /** Per command: its replies and latencies in the interval (null for the end-of-run remainder). */
  perCommand: { command: string; data: HistogramData }[] | null;
  connections: number | null;
}

export class LiveMetrics {
  /** Told of every addition (--statsd). */
  onPublish: ((p: Published) => void) | null = null;
  private readonly counters = new Map<string, Map<string, Series>>();
  private readonly gauges = new Map<string, Map<string, Series>>();
  private readonly durations = new Map<string, HistogramSeries>();
  private run: { plan: Plan; labels: Labels; published: Counts } | null = null;

  /** A run's measured phase starts (its figures count from here). */
  startRun(plan: Plan, engine: string): void {
    const labels = runLabels(plan, engine);
    this.run = { plan, labels, published: emptyCounts() };
    this.setGauge(FAMILIES.running, labels, 1);
    // Several load machines split --rate by connections: each says its own share, so a fleet's add up.
    if (plan.rate > 0) this.setGauge(FAMILIES.targetRate, labels, (plan.rate * localConnections(plan).count) / plan.connections);
  }

  /** One interval of the running measured phase, once it has ended. */
  addInterval(i: RawInterval): void {
    const run = this.run;
    if (!run) return;
    const counts = countsOf(run.plan, i, outcomesOf(i), i.bytesOut ?? 0, i.bytesIn ?? 0);
    if (i.connections !== undefined) this.setGauge(FAMILIES.connections, run.labels, i.connections);
    this.publish(counts, commandHistograms(run.plan, i), i.connections ?? null);
  }

  /** The JS engine's event-loop delay over the last interval (seconds). */
  setClientLag(seconds: number): void {
    if (this.run) this.setGauge(FAMILIES.clientLag, this.run.labels, seconds);
  }

  /**
   * The run ended: what its result counted and the intervals did not yet
   * (the replies in flight at the end, an interval cut after the last poll)
   * is added now, so the counters equal the result's.
   */
  endRun(result: RunResult): void {
    const run = this.run;
    if (!run) return;
    const final = countsOf(run.plan, result, outcomesOf({ ...result, lost: result.lost ?? 0 }), result.bytesOut, result.bytesIn);
    this.publish(subtractCounts(final, run.published), null, null);
    const labels = run.labels;
    this.setGauge(FAMILIES.running, labels, 0);
    this.setGauge(FAMILIES.connections, labels, 0);
    this.setGauge(FAMILIES.clientLag, labels, result.clientLag.p99 / 1e6);
    const lag = result.clientLag.scheduleLagUs;
    if (lag) {
      const at: Record<(typeof LAG_QUANTILES)[number], number> = { '0.5': lag.p50, '0.99': lag.p99, '0.999': lag.p999 };
      for (const q of LAG_QUANTILES) this.setGauge(FAMILIES.scheduleLag, { ...labels, quantile: q }, at[q] / 1e6);
    }
    for (const n of result.perNode ?? []) this.addCounter(FAMILIES.nodeRequests, { ...labels, node: n.node }, n.requests);
    this.run = null;
  }

  /** The run ended without a result (the engine threw): its series stop where they are. */
  abandonRun(): void {
    if (this.run) this.setGauge(FAMILIES.running, this.run.labels, 0);
    this.run = null;
  }

  private publish(c: Counts, perCommand: Published['perCommand'], connections: number | null): void {
    const run = this.run!;
    const command = commandLabel(run.plan);
    for (const [outcome, n] of Object.entries(c.outcomes)) {
      // Series appear once something was counted in them (a run without --verify-get has no mismatch series).
      if (n > 0 || outcome === 'ok') this.addCounter(FAMILIES.requests, { ...run.labels, command, outcome }, n);
    }
    this.addCounter(FAMILIES.bytesSent, run.labels, c.bytesOut);
    this.addCounter(FAMILIES.bytesReceived, run.labels, c.bytesIn);
    for (const [cmd, d] of c.durations) {
      const labels = { ...run.labels, command: cmd };
      const key = labelKey(labels);
      let h = this.durations.get(key);
      if (!h) this.durations.set(key, (h = { labels, counts: new Array<number>(DURATION_BUCKETS_SECONDS.length + 1).fill(0), sumSeconds: 0 }));
      d.counts.forEach((n, k) => (h!.counts[k] += n));
      h.sumSeconds += d.sumSeconds;
    }
    addInto(run.published, c);
    this.onPublish?.({ labels: run.labels, command, outcomes: c.outcomes, bytesOut: c.bytesOut, bytesIn: c.bytesIn, perCommand, connections });
  }

  private addCounter(f: Family, labels: Labels, n: number): void {
    const s = seriesOf(this.counters, f, labels);
    s.value += Math.max(0, n);
  }

  private setGauge(f: Family, labels: Labels, v: number): void {
    seriesOf(this.gauges, f, labels).value = v;
  }

  /** Every family with its series, for the exposition (families with no series yet left out). */
  snapshot(): { family: Family; series: Series[] | HistogramSeries[] }[] {
    const out: { family: Family; series: Series[] | HistogramSeries[] }[] = [];
    for (const family of Object.values(FAMILIES) as Family[]) {
      if (family.type === 'histogram') {
        if (this.durations.size > 0) out.push({ family, series: [...this.durations.values()] });
        continue;
      }
      const m = (family.type === 'counter' ? this.counters : this.gauges).get(family.name);
      if (m && m.size > 0) out.push({ family, series: [...m.values()] });
    }
    return out;
  }
}

export type { Series, HistogramSeries };

function seriesOf(store: Map<string, Map<string, Series>>, f: Family, labels: Labels): Series {
  let m = store.get(f.name);
  if (!m) store.set(f.name, (m = new Map()));
  const key = labelKey(labels);
  let s = m.get(key);
  if (!s) m.set(key, (s = { labels, value: 0 }));
  return s;
}

/** The command label of respbench_requests_total: the run's one command, or "all" when it sends several (outcomes are counted per run). */
function commandLabel(plan: Plan): string {
  const names = commandHistograms(plan, { setHistogram: EMPTY, getHistogram: EMPTY, commandHistograms: plan.commands?.map(() => EMPTY) });
  return names.length === 1 ? names[0].command : 'all';
}

const EMPTY: HistogramData = { unit: 'ns', significantDigits: 3, buckets: [] };

function emptyCounts(): Counts {
  return { outcomes: { ok: 0, error: 0, miss: 0, mismatch: 0, lost_write: 0, lost: 0 }, bytesOut: 0, bytesIn: 0, durations: new Map() };
}

function countsOf(plan: Plan, h: Parameters<typeof commandHistograms>[1], outcomes: Record<Outcome, number>, bytesOut: number, bytesIn: number): Counts {
  const durations = new Map<string, { counts: number[]; sumSeconds: number }>();
  for (const { command, data } of commandHistograms(plan, h)) durations.set(command, foldDurations(data));
  return { outcomes, bytesOut, bytesIn, durations };
}

function addInto(into: Counts, c: Counts): void {
  for (const k of Object.keys(c.outcomes) as Outcome[]) into.outcomes[k] += c.outcomes[k];
  into.bytesOut += c.bytesOut;
  into.bytesIn += c.bytesIn;
  for (const [cmd, d] of c.durations) {
    const had = into.durations.get(cmd);
    if (!had) into.durations.set(cmd, { counts: [...d.counts], sumSeconds: d.sumSeconds });
    else {
      d.counts.forEach((n, k) => (had.counts[k] += n));
      had.sumSeconds += d.sumSeconds;
    }
  }
}

/** What `final` counted beyond `published`, never below zero (counters only grow). */
function subtractCounts(final: Counts, published: Counts): Counts {
  const out = emptyCounts();
  for (const k of Object.keys(final.outcomes) as Outcome[]) out.outcomes[k] = Math.max(0, final.outcomes[k] - published.outcomes[k]);
  out.bytesOut = Math.max(0, final.bytesOut - published.bytesOut);
  out.bytesIn = Math.max(0, final.bytesIn - published.bytesIn);
  for (const [cmd, d] of final.durations) {
    const had = published.durations.get(cmd);
    const counts = d.counts.map((n, k) => Math.max(0, n - (had?.counts[k] ?? 0)));
    out.durations.set(cmd, { counts, sumSeconds: Math.max(0, d.sumSeconds - (had?.sumSeconds ?? 0)) });
  }
  return out;
}
