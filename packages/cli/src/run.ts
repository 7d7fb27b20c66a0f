/**
 * One run, end to end: an engine's RawResult turned into the RunResult users
 * read (throughput, avg us/op, latency percentiles) and the exit status it
 * deserves. Used by the CLI and by studies.
 */
import type { LatencyUs } from '@respbench/report';
import { LatencyHistogram, type HistogramData } from './engine-js/histogram.js';
import { EXIT } from './exit.js';
import { SECRET_SHOWN } from './printable.js';
import { addBuckets, maxOfBuckets, meanOfBuckets, totalOf, valueAtPercentileOfBuckets } from './buckets.js';
import { redactSecrets, redactText } from './secrets.js';
import { coarsenIntervals, foldShortTail } from './series.js';
import type { RunMeta } from './meta.js';
import { localConnections, type Engine, type Failure, type Plan, type RawInterval, type RawResult } from './engine-js/plan.js';
import { requestsForConnection } from './engine-js/keys.js';
import { parseMixTemplate, templateName } from './engine-js/command.js';
import type { RunOptions } from './engine-js/progress.js';
import { explainEarlyClose } from './early-close.js';

/**
 * What `--json` prints: the engine's RawResult with the figures derived from
 * it. Version 2 renamed `workload` (which held the Plan) to `plan`; version 3
 * writes each histogram in files as HdrHistogram V2 base64 (result-json.ts;
 * in memory it is still the bucket list); other field names are stable.
 */
export interface RunResult extends RawResult {
  /** The shape of this object: 2 since `workload` became `plan`, 3 since files hold histograms as V2 base64. */
  version: typeof RUN_RESULT_VERSION;
  target: { host: string; port: number };
  /** The Plan the engine ran. */
  plan: Plan;
  elapsedSec: number;
  opsPerSec: number;
  /** elapsed / requests: the original tool's "avg us/op" (inverse throughput). */
  avgUsPerOp: number;
  /** Per-request latency, reply parsed − request written. */
  latencyUs: LatencyUs;
  /**
   * The same figures per operation kind, as memtier's Sets/Gets/Totals: a
   * row per command the run sent (`SET`, `GET`, or the -t test's or command
   * line's command), then `Totals`. The command rows' requests add up to the
   * Totals row's.
   */
  perCommand: CommandRow[];
  /**
   * The latency at each percentile asked for (--percentiles; default
   * 50,90,99,99.9), microseconds, keyed `p50`, `p99.9`, `p99.99`, … in the
   * order asked; the human table shows these columns.
   */
  percentilesUs: Record<string, number>;
  /** The measured phase interval by interval (default 1 s, --interval), wall-clock stamped. */
  series: SeriesEntry[];
  preloadElapsedSec: number;
  /** --rate: percentiles of the service time (reply − actual send). */
  serviceUs: LatencyUs | null;
  /** --rate: false when the achieved rate is more than 2% off the asked one. */
  rateKept: boolean | null;
  /** The client's own lateness during the measured phase, beside the latency it may have inflated. */
  clientLag: ClientLag;
  /** True when every planned request got its reply. */
  complete: boolean;
  /** Set when a signal stopped the run; absent otherwise. */
  interrupted?: Interruption;
  /** Tool, version, engine, start time, load machine and command line (set by the command that ran it; meta.ts). */
  meta?: RunMeta;
  /** --cluster: the figures per primary (from `nodes`), so a hot shard shows; absent without --cluster. */
  perNode?: NodeRow[];
}

/** One primary's figures in a --cluster run. */
export interface NodeRow {
  /** `host:port` */
  node: string;
  requests: number;
  opsPerSec: number;
  errors: number;
  /** Replies from it that redirected a request (MOVED, ASK, TRYAGAIN, CLUSTERDOWN). */
  redirections: number;
  p50Us: number;
  p99Us: number;
}

/** RunResult.perNode from the engine's per-primary counts. */
function perNodeRows(raw: RawResult, elapsedSec: number): NodeRow[] | undefined {
  if (!raw.nodes) return undefined;
  return raw.nodes.map((n) => {
    const h = LatencyHistogram.fromData(n.histogram);
    const us = (ns: number) => Math.round(ns) / 1000;
    return { node: n.node, requests: n.requests, opsPerSec: elapsedSec > 0 ? n.requests / elapsedSec : 0, errors: n.errors, redirections: n.redirections ?? 0, p50Us: us(h.valueAtPercentile(50)), p99Us: us(h.valueAtPercentile(99)) };
  });
}

export const RUN_RESULT_VERSION = 3;

/** One interval of RunResult.series. */
export interface SeriesEntry {
  /** When the interval began, ISO 8601 UTC (the load machine's clock). */
  time: string;
  /** Seconds from the measured phase's start to the interval's start. */
  startSec: number;
  durationSec: number;
  requests: number;
  /** requests / durationSec. */
  opsPerSec: number;
  errors: number;
  misses: number;
  mismatches: number;
  latencyUs: IntervalLatencyUs;
  /** Connections open at the interval's end (grows under --ramp-connections); absent for results from before it was counted. */
  connections?: number;
  /** The same per command the run sent, as RunResult.perCommand (no Totals: the fields above are). */
  perCommand: { command: string; requests: number; opsPerSec: number; latencyUs: IntervalLatencyUs }[];
}

/** An interval's latency, microseconds (0 when it had no replies). */
export interface IntervalLatencyUs {
  p50: number;
  p99: number;
  max: number;
}

/** An interval's latency figures from its histograms' bucket lists (read off the sparse buckets: a series has thousands). */
function intervalLatencyUs(lists: HistogramData['buckets'][]): IntervalLatencyUs {
  // An interval's other op kind is often empty: nothing to add.
  const parts = lists.filter((b) => b.length > 0);
  const buckets = parts.length <= 1 ? (parts[0] ?? []) : parts.reduce((sum, b) => addBuckets(sum, b), [] as HistogramData['buckets']);
  const total = totalOf(buckets);
  const us = (ns: number) => Math.round(ns) / 1000;
  return { p50: us(valueAtPercentileOfBuckets(buckets, 50, total)), p99: us(valueAtPercentileOfBuckets(buckets, 99, total)), max: us(maxOfBuckets(buckets)) };
}

/** One RawInterval as RunResult.series shows it. */
export function seriesEntry(plan: Plan, i: RawInterval, startedUnixMs: number): SeriesEntry {
  const durationSec = Math.max(0, i.endNs - i.startNs) / 1e9;
  const rate = (n: number) => (durationSec > 0 ? n / durationSec : 0);
  // Each histogram's buckets decoded once (an interval's are packed: each read decodes them).
  const decoded = new Map<HistogramData, HistogramData['buckets']>();
  const bucketsOf = (h: HistogramData) => decoded.get(h) ?? decoded.set(h, h.buckets).get(h)!;
  const set = bucketsOf(i.setHistogram);
  const get = bucketsOf(i.getHistogram);
  const perCommand = commandHistograms(plan, i).map(({ command, data }) => {
    const buckets = bucketsOf(data);
    const requests = totalOf(buckets);
    return { command, requests, opsPerSec: rate(requests), latencyUs: intervalLatencyUs([buckets]) };
  });
  return {
    time: new Date(startedUnixMs + i.startNs / 1e6).toISOString(),
    startSec: i.startNs / 1e9,
    durationSec,
    requests: i.requests,
    opsPerSec: rate(i.requests),
    errors: i.errors,
    misses: i.misses,
    mismatches: i.mismatches,
    latencyUs: intervalLatencyUs([set, get]),
    ...(i.connections !== undefined ? { connections: i.connections } : {}),
    perCommand,
  };
}

/** The series of a RawResult (empty for one from before series existed). */
export function seriesOf(plan: Plan, raw: RawResult): SeriesEntry[] {
  return foldShortTail(raw.intervals ?? []).map((i) => seriesEntry(plan, i, raw.startedUnixMs ?? 0));
}

/** One line per interval, as --interval prints them while a run goes on. */
export function formatSeriesLine(e: SeriesEntry, withConnections = false): string {
  const l = e.latencyUs;
  const at = `${e.time.slice(11, 23)}Z`;
  const t = (e.startSec + e.durationSec).toFixed(1).padStart(6);
  const cmds = e.perCommand.length > 1 ? ` · ${e.perCommand.map((c) => `${c.command} ${c.opsPerSec.toFixed(0)}/s p99 ${c.latencyUs.p99.toFixed(1)}`).join(' · ')}` : '';
  const conns = withConnections && e.connections !== undefined ? ` · ${e.connections} connection${e.connections === 1 ? "" : "s"}` : '';
  return `[${at} ${t}s] ${e.opsPerSec.toFixed(0).padStart(9)} ops/s${conns} · ${e.requests} requests · errors ${e.errors} · misses ${e.misses} · mismatches ${e.mismatches} · p50 ${l.p50.toFixed(1)} · p99 ${l.p99.toFixed(1)} · max ${l.max.toFixed(1)} us${cmds}`;
}

/** One row of RunResult.perCommand. */
export interface CommandRow {
  /** The command's name, upper case (`SET`, `GET`, `LPUSH`, …), or `Totals`. */
  command: string;
  requests: number;
  opsPerSec: number;
  latencyUs: LatencyUs;
  /** As RunResult.percentilesUs, for this command's requests. */
  percentilesUs: Record<string, number>;
}

/** The percentiles shown unless --percentiles says otherwise (the table's columns since the start). */
export const DEFAULT_PERCENTILES: readonly number[] = [50, 90, 99, 99.9];

/** The key a percentile goes by in percentilesUs: `p50`, `p99.9`, `p99.99`. */
export function percentileKey(p: number): string {
  return `p${p}`;
}

/** The latency at each percentile, microseconds, keyed by percentileKey. */
export function percentilesUsOf(data: HistogramData, percentiles: readonly number[]): Record<string, number> {
  // Read off the sparse buckets (a few hundred), not a dense histogram built for it (32,768 counts per scan).
  const total = totalOf(data.buckets);
  const out: Record<string, number> = {};
  for (const p of percentiles) out[percentileKey(p)] = Math.round(valueAtPercentileOfBuckets(data.buckets, p, total)) / 1000;
  return out;
}

/** The name a per-command row goes by: the template's first word, upper case. */
export function commandName(template: string): string {
  const word = template.trim().split(/\s+/)[0] ?? '';
  return word === '' ? '?' : word.toUpperCase();
}

/**
 * A command mix's row names, in its order: each command's name, numbered
 * when two share one (GET#1, GET#2), as the engine's PreparedPlan names
 * them; null when the plan has no mix.
 */
export function mixRowNames(plan: Plan): string[] | null {
  const mix = plan.commands ?? [];
  if (mix.length === 0) return null;
  const names = mix.map((m) => {
    try {
      return templateName(parseMixTemplate(m.template, plan.literalCommands)) || '?';
    } catch {
      return commandName(m.template);
    }
  });
  return names.map((n, i) => (names.filter((x) => x === n).length > 1 ? `${n}#${names.slice(0, i + 1).filter((x) => x === n).length}` : n));
}

/** The rows of RunResult.perCommand: the commands the run sends (the mode's, or a mix's), then Totals. */
export function perCommandRows(plan: Plan, raw: RawResult, elapsedSec: number, percentiles: readonly number[] = DEFAULT_PERCENTILES): CommandRow[] {
  const row = (command: string, data: HistogramData): CommandRow => {
    const requests = data.buckets.reduce((n, [, count]) => n + count, 0);
    return { command, requests, opsPerSec: elapsedSec > 0 ? requests / elapsedSec : 0, latencyUs: summaryUs(data), percentilesUs: percentilesUsOf(data, percentiles) };
  };
  const rows = commandHistograms(plan, raw).map(({ command, data }) => row(command, data));
  rows.push(row('Totals', raw.histogram));
  return rows;
}

/** Latencies recorded per op kind, as a result or an interval holds them. */
type OpHistograms = Pick<RawResult, 'setHistogram' | 'getHistogram' | 'commandHistograms'>;

/**
 * Each command the run sends with its latencies: a mix's commands in its
 * order, else the mode's SET side and GET side (none for a result from
 * before they were recorded apart).
 */
export function commandHistograms(plan: Plan, h: OpHistograms): { command: string; data: HistogramData }[] {
  const names = mixRowNames(plan);
  if (names && h.commandHistograms) return names.map((command, k) => ({ command, data: h.commandHistograms![k] }));
  if (!h.setHistogram || !h.getHistogram) return [];
  const out: { command: string; data: HistogramData }[] = [];
  if (plan.mode !== 'get') out.push({ command: commandName(plan.setCmd), data: h.setHistogram });
  if (plan.mode !== 'set') out.push({ command: commandName(plan.getCmd), data: h.getHistogram });
  return out;
}

/**
 * How late the client itself was: a request sent late, or a reply read late,
 * adds the client's pause to a latency that reads as the server's.
 */
export interface ClientLag {
  /** --rate: how late requests went out against their schedule (actual − intended send), us; null without --rate. */
  scheduleLagUs: LatencyUs | null;
  /** The JS engine: how late its event loop ran (RawResult.eventLoopDelay), us; null for the native engine. */
  eventLoopDelayUs: { p50: number; p99: number; max: number; mean: number } | null;
  /** The larger p99 of the two, us (0 when neither was measured). */
  p99: number;
  /** True when that p99 is more than CLIENT_LAG_SHARE of the latency p99: the percentiles include the client's own pauses. */
  distortsLatency: boolean;
}

/** Share of the latency p99 above which the client's lag is said to distort the percentiles. */
export const CLIENT_LAG_SHARE = 0.1;

export function clientLagOf(raw: RawResult, latencyP99Us: number): ClientLag {
  const scheduleLagUs = raw.scheduleLagHistogram ? summaryUs(raw.scheduleLagHistogram) : null;
  const d = raw.eventLoopDelay;
  const us = (ns: number) => Math.round(ns) / 1000;
  const eventLoopDelayUs = d && d.samples > 0 ? { p50: us(d.p50), p99: us(d.p99), max: us(d.max), mean: us(d.mean) } : null;
  const p99 = Math.max(scheduleLagUs?.p99 ?? 0, eventLoopDelayUs?.p99 ?? 0);
  return { scheduleLagUs, eventLoopDelayUs, p99, distortsLatency: raw.requests > 0 && p99 > CLIENT_LAG_SHARE * latencyP99Us };
}

/**
 * Interrupted by a signal: which one, and the requests sent whose replies
 * never came (set by the command that caught the signal).
 */
export interface Interruption {
  signal: 'SIGINT' | 'SIGTERM' | 'SIGHUP';
  /** Requests written to the server, replies counted or not (null: the engine did not say). */
  sent: number | null;
  /** Requests written whose replies had not arrived when the run stopped. */
  unanswered: number | null;
}

export function finishResult(plan: Plan, given: RawResult, percentiles: readonly number[] = DEFAULT_PERCENTILES): RunResult {
  // Whole things are counted in whole numbers, whatever clock the engine read.
  const raw: RawResult = {
    ...given,
    ...redactedTexts(plan, { ...given, failure: given.failure ?? nothingAnswered(plan, given) }),
    elapsedNs: Math.round(given.elapsedNs),
    preloadElapsedNs: Math.round(given.preloadElapsedNs),
    ...(given.warmupElapsedNs === undefined ? {} : { warmupElapsedNs: Math.round(given.warmupElapsedNs) }),
  };
  const elapsedSec = raw.elapsedNs / 1e9;
  const latencyUs = summaryUs(raw.histogram);
  return {
    version: RUN_RESULT_VERSION,
    ...raw,
    lostWrites: raw.lostWrites ?? 0,
    pushes: raw.pushes ?? 0,
    warmupRequests: raw.warmupRequests ?? 0,
    warmupElapsedNs: raw.warmupElapsedNs ?? 0,
    serviceHistogram: raw.serviceHistogram ?? null,
    // The series (above) has every interval; the histograms per interval are bounded (series.ts).
    ...(raw.intervals ? { intervals: coarsenIntervals(raw.intervals) } : {}),
    scheduleLagHistogram: raw.scheduleLagHistogram ?? null,
    eventLoopDelay: raw.eventLoopDelay ?? null,
    target: { host: plan.host, port: plan.port },
    plan: redactPlan(plan),
    elapsedSec,
    opsPerSec: elapsedSec > 0 ? raw.requests / elapsedSec : 0,
    avgUsPerOp: raw.requests > 0 ? (elapsedSec * 1e6) / raw.requests : 0,
    latencyUs,
    perCommand: perCommandRows(plan, raw, elapsedSec, percentiles),
    percentilesUs: percentilesUsOf(raw.histogram, percentiles),
    series: seriesOf(plan, raw),
    preloadElapsedSec: raw.preloadElapsedNs / 1e9,
    ...(raw.nodes ? { perNode: perNodeRows(raw, elapsedSec) } : {}),
    serviceUs: raw.serviceHistogram ? summaryUs(raw.serviceHistogram) : null,
    rateKept: plan.rate > 0 && elapsedSec > 0 ? Math.abs(raw.requests / elapsedSec - plan.rate) <= plan.rate * 0.02 : null,
    clientLag: clientLagOf(raw, latencyUs.p99),
    // --reconnect: requests lost to a drop were handed out and are accounted for.
    complete: raw.failure === null && (plan.durationMs > 0 || raw.requests + (raw.lost ?? 0) === plannedRequests(plan)),
  };
}

/**
 * The result's texts that quote the server or the failure (an error reply, a
 * mismatch, why the run ended) without the password: a server may echo a
 * command's arguments (AUTH's among them) in its error replies.
 */
function redactedTexts(plan: Plan, r: RawResult): Pick<RawResult, 'firstError' | 'firstMismatch' | 'failure'> {
  const hide = (t: string | null) => (t === null ? null : redactText(t, plan.password));
  return { firstError: hide(r.firstError), firstMismatch: hide(r.firstMismatch), failure: r.failure && { ...r.failure, message: redactText(r.failure.message, plan.password) } };
}

/**
 * A run whose measured phase got no reply at all measured nothing, whatever
 * else went right: its figures are not zeros but absent, and it is no
 * success (exit 1). Without this a --reconnect run against a server that
 * accepts and closes every connection at once ended with exit 0,
 * `requests 0/N` and ops/s 0. Null when some request was answered, or when
 * there was nothing to send.
 */
export function nothingAnswered(plan: Plan, raw: RawResult): Failure | null {
  if (raw.failure !== null || raw.requests > 0) return null;
  const planned = plan.durationMs > 0 ? null : plannedRequests(plan);
  if (planned === 0) return null;
  const of = planned === null ? `in ${plan.durationMs} ms (--duration)` : `of ${planned}`;
  const lost = raw.lost ?? 0;
  if (lost > 0 || (raw.reconnects ?? 0) > 0) {
    return { kind: 'closed', message: `no request ${of} was answered: the server closed every connection first (${lost} requests lost, ${raw.reconnects ?? 0} reconnects)` };
  }
  const unanswered = raw.unanswered ?? 0;
  return { kind: 'timeout', message: `no request ${of} was answered${unanswered > 0 ? ` (${unanswered} sent, no reply)` : ''}` };
}

/** The timed requests this machine runs: all of them, or its connections' shares (--client-count). */
export function plannedRequests(plan: Plan): number {
  if ((plan.clientCount ?? 1) <= 1) return plan.requests;
  const local = localConnections(plan);
  let n = 0;
  for (let c = local.first; c < local.first + local.count; c++) n += requestsForConnection(plan.requests, plan.connections, c);
  return n;
}

/** The Plan as it may be shown: the password as "***" (the engine got the real one). */
export function redactPlan(plan: Plan): Plan {
  return redactSecrets(plan);
}

/** Percentiles, max and mean in microseconds (the shape a study row takes, too). */
export function summaryUs(data: HistogramData): LatencyUs {
  // Off the sparse buckets, as percentilesUsOf: a result's rows were a few ms of start-to-finish CPU each.
  const b = data.buckets;
  const total = totalOf(b);
  const us = (ns: number) => Math.round(ns) / 1000;
  return {
    p50: us(valueAtPercentileOfBuckets(b, 50, total)),
    p90: us(valueAtPercentileOfBuckets(b, 90, total)),
    p99: us(valueAtPercentileOfBuckets(b, 99, total)),
    p999: us(valueAtPercentileOfBuckets(b, 99.9, total)),
    max: us(maxOfBuckets(b)),
    mean: Math.round(meanOfBuckets(b, total)) / 1000,
  };
}

/** One run of a Plan that preparePlan (prepare.ts) completed: under --cluster, with its topology. */
/**
 * Told of every run this process makes, whoever starts it (a run, a suite's
 * tests, a capacity search's steps, a study's rounds): --metrics-listen and
 * --statsd. `interval` gets each interval of the measured phase as it ends;
 * `ended` the result, or null when the engine threw.
 */
export interface RunWatcher {
  started(plan: Plan, engine: string): void;
  interval(i: RawInterval): void;
  ended(result: RunResult | null): void;
}

const watchers = new Set<RunWatcher>();

/** Adds a watcher until the returned function is called. */
export function watchRuns(w: RunWatcher): () => void {
  watchers.add(w);
  return () => watchers.delete(w);
}

export async function runPlan(engine: Engine, plan: Plan, options: RunOptions = {}, percentiles: readonly number[] = DEFAULT_PERCENTILES): Promise<RunResult> {
  const askedAt = Date.now();
  const finish = async (raw: RawResult) => finishResult(plan, await explainEarlyClose(plan, { ...raw, ...connectPhase(askedAt, raw) }), percentiles);
  if (watchers.size === 0) return finish(await engine.run(plan, options));
  const watching = [...watchers];
  for (const w of watching) w.started(plan, engine.name);
  const given = options.onInterval;
  const onInterval = (i: RawInterval) => {
    given?.(i);
    for (const w of watching) w.interval(i);
  };
  let result: RunResult | null = null;
  try {
    result = await finish(await engine.run(plan, { ...options, onInterval }));
    return result;
  } finally {
    for (const w of watching) w.ended(result);
  }
}

/** A connect phase this long is said in the output: a server slow to accept (fakeredis took 7 s for 50 connections). */
export const SLOW_CONNECT_MS = 1_000;

/** How long the engine took before the first timed request, preload and warmup aside (nothing when it never got there). */
function connectPhase(askedAt: number, raw: RawResult): Pick<RawResult, 'connectElapsedNs'> {
  if (raw.startedUnixMs === undefined || raw.requests === 0) return {};
  const ms = raw.startedUnixMs - askedAt - raw.preloadElapsedNs / 1e6 - (raw.warmupElapsedNs ?? 0) / 1e6;
  return { connectElapsedNs: Math.max(0, Math.round(ms * 1e6)) };
}

/** Which signal stopped the run, and the requests it left unanswered (when the engine counted them). */
export function interruptionOf(signal: Interruption['signal'], r: RunResult): Interruption {
  const unanswered = r.unanswered ?? null;
  return { signal, sent: unanswered === null ? null : r.requests + unanswered, unanswered };
}

/** A run that failed before its measured phase got a single reply: its figures mean nothing. */
export function notStarted(result: RunResult): boolean {
  return result.failure !== null && result.requests === 0;
}

/** Reads that found nothing where get mode with --verify-get expected a value. */
export function missingCountsAsVerifyFailure(result: RunResult): boolean {
  return result.plan.verifyGet && result.plan.mode === 'get' && result.misses > 0;
}

export function exitCodeFor(result: RunResult): number {
  if (result.failure) {
    if (result.failure.kind === 'interrupted') return EXIT.sigint;
    return EXIT.failed;
  }
  if (result.mismatches > 0 || result.lostWrites > 0 || missingCountsAsVerifyFailure(result)) return EXIT.verifyFailed;
  if (result.errors > 0) return EXIT.errorReplies;
  return EXIT.ok;
}
