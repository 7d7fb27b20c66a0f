/**
 * Rounds → aggregates: per scenario × mode, the ops/s of each round and their
 * mean, standard deviation, min and max, the means of avg us/op and elapsed,
 * the latency percentiles of all rounds' requests together (from the merged
 * histograms), the rounds too short to mean much, and the ratio to a
 * baseline scenario.
 */
import type { CapacityRun, HistogramData, LatencyUs, RunRow, StudyInfo } from './rows.js';
import { scenarioLabel, shortRunReason } from './rows.js';

export interface Stats {
  /** Number of values. */
  n: number;
  mean: number | null;
  /** Sample standard deviation (n − 1); 0 for a single value, null for none. */
  stddev: number | null;
  min: number | null;
  max: number | null;
}

export function stats(values: readonly number[]): Stats {
  const n = values.length;
  if (n === 0) return { n, mean: null, stddev: null, min: null, max: null };
  const mean = values.reduce((a, b) => a + b, 0) / n;
  const squares = values.reduce((a, v) => a + (v - mean) ** 2, 0);
  return {
    n,
    mean,
    stddev: n > 1 ? Math.sqrt(squares / (n - 1)) : 0,
    min: Math.min(...values),
    max: Math.max(...values),
  };
}

/**
 * Coefficient of variation of the rounds' ops/s: sample standard deviation /
 * mean (0.05 = 5%); null with fewer than two values, where there is no
 * spread to judge.
 */
export function coefficientOfVariation(s: Stats): number | null {
  if (s.n < 2 || s.mean === null || s.stddev === null || s.mean === 0) return null;
  return s.stddev / s.mean;
}

/** The coefficient of variation above which a study's summary warns that its rounds disagree (StudyInfo.cvWarn). */
export const DEFAULT_CV_WARN = 0.1;

/** A connect phase this long is named in the reports (the CLI's SLOW_CONNECT_MS says the same of one run). */
export const SLOW_CONNECT_SEC = 1;

/** The rows whose rounds disagree: ops/s CV above `threshold`. */
export function unsteadyRows(summaries: SummaryRow[], threshold: number = DEFAULT_CV_WARN): SummaryRow[] {
  return summaries.filter((s) => s.cvOpsPerSec !== null && s.cvOpsPerSec > threshold);
}

export function mean(values: readonly number[]): number | null {
  return values.length === 0 ? null : values.reduce((a, b) => a + b, 0) / values.length;
}

export interface RoundCell {
  round: number;
  status: RunRow['status'] | 'missing';
  /** Ops/s of an ok round; null otherwise. */
  opsPerSec: number | null;
}

export interface SummaryRow {
  group: string;
  scenario: string;
  tags: string[];
  /** `name (tag, tag)`. */
  label: string;
  mode: string;
  /** One cell per planned round (1..rounds, or more if rows have more). */
  rounds: RoundCell[];
  okRounds: number;
  /** Rounds that ran but are not ok (failed, error replies, mismatches). */
  badRounds: number;
  /** Those rounds with why (the run's error: its failure, first error reply or first mismatch), for the reports' notes. */
  notOkRounds?: { round: number; status: RunRow['status']; reason: string }[];
  /** Rounds whose connect phase took SLOW_CONNECT_SEC or more: the server was slow to accept. */
  slowConnects?: { round: number; seconds: number }[];
  opsPerSec: Stats;
  /** opsPerSec.stddev / opsPerSec.mean: how much the rounds disagree; null under two ok rounds. */
  cvOpsPerSec: number | null;
  avgUsPerOp: Stats;
  elapsedSec: Stats;
  /**
   * Latency percentiles of every request of the ok rounds: the rounds'
   * histograms merged (SummarizeOptions.mergeLatency), or the one ok round's
   * own; null when rounds cannot be merged. Never a mean of the rounds' p99s,
   * which is no percentile of anything.
   */
  latencyUs: LatencyUs | null;
  /**
   * The same per op kind, merged over the ok rounds as latencyUs: the
   * SET-side and GET-side requests (memtier's Sets/Gets rows; latencyUs is
   * their Totals). Null when the rounds have no such histograms or the side
   * sent nothing.
   */
  setLatencyUs: LatencyUs | null;
  getLatencyUs: LatencyUs | null;
  /**
   * With the study's chosen percentiles (SummarizeOptions.percentiles): the
   * latency at each, keyed `p50`, `p99.99`, from the same merged histograms
   * as latencyUs, setLatencyUs and getLatencyUs; unset without a choice.
   */
  percentilesUs?: Record<string, number> | null;
  setPercentilesUs?: Record<string, number> | null;
  getPercentilesUs?: Record<string, number> | null;
  /** Timed requests answered over the ok rounds (what the per-command rows' requests add up to). */
  requests?: number;
  /**
   * A command mix: a row per command of the mix, in its order, each merged
   * over the ok rounds as latencyUs (latencyUs is their Totals). Empty
   * without a mix, or when a round lacks the per-command histograms.
   */
  perCommand?: CommandSummary[];
  /** Ok rounds too short to mean much (shortRunReason). */
  shortRounds: number;
  /** The first short round's reason, for the notes. */
  shortReason: string | null;
  /** The command pairs the rounds ran, `SET/GET`, from their set_cmd/get_cmd flags (or their mix, `80×GET __key__ / 20×SET`). */
  commands: string[];
  /** Whether --verify-get was on (it checks reads: get and mixed modes). */
  verifyGet: boolean;
  /** Rounds whose reads did not verify. */
  mismatchRounds: number;
  /** Mean ops/s divided by the baseline scenario's mean ops/s in the same mode. */
  ratioToBaseline: number | null;
  /** A capacity study: the last ok round's search (its chart), with its round; null otherwise. */
  capacity?: { round: number; run: CapacityRun } | null;
}

/** One command of a mix, over a scenario × mode's ok rounds. */
export interface CommandSummary {
  /** As the run names it: `GET`, `SET`, `GET#2` when two share a name. */
  command: string;
  /** Its requests over the ok rounds. */
  requests: number;
  /** Its ops/s in each planned round (its requests / the round's elapsed), null where the round is not ok. */
  rounds: (number | null)[];
  /** Its ops/s over the ok rounds. */
  opsPerSec: Stats;
  /** Its latency: the rounds' histograms of this command merged. */
  latencyUs: LatencyUs | null;
  /** At the chosen percentiles (SummarizeOptions.percentiles). */
  percentilesUs?: Record<string, number> | null;
}

export interface SummarizeOptions {
  /**
   * Percentiles of several runs' histograms merged (they merge by adding the
   * counts of equal buckets). The caller gives it because it knows the
   * histogram layout: respbench passes its LatencyHistogram's merge. Without
   * it, a scenario with more than one ok round has no summary latency.
   */
  mergeLatency?: (histograms: HistogramData[]) => LatencyUs;
  /** The study's chosen percentiles (StudyInfo.percentiles); with mergePercentiles, the rows' percentilesUs. */
  percentiles?: readonly number[];
  /** The latency at each percentile of several histograms merged, keyed `p50`, `p99.99` (as mergeLatency, for chosen percentiles). */
  mergePercentiles?: (histograms: HistogramData[], percentiles: readonly number[]) => Record<string, number>;
}

/** Histograms of every ok measured round, or null when one lacks it (a row from before it was kept). */
function allHistograms(rows: RunRow[], pick: (r: RunRow) => HistogramData | null | undefined): HistogramData[] | null {
  const measured = rows.filter((r) => r.latencyUs !== null);
  const hs = measured.map(pick).filter((h): h is HistogramData => h !== null && h !== undefined);
  return measured.length > 0 && hs.length === measured.length ? hs : null;
}

/** The chosen percentiles of rows' histograms merged; the one round's own without a merge; null without a choice or figures. */
function mergedPercentiles(rows: RunRow[], pick: (r: RunRow) => HistogramData | null | undefined, options: SummarizeOptions, own: boolean): Record<string, number> | null {
  const ps = options.percentiles;
  if (!ps || ps.length === 0) return null;
  const hs = allHistograms(rows, pick);
  if (hs && options.mergePercentiles && !hs.every((h) => h.buckets.length === 0)) return options.mergePercentiles(hs, ps);
  const measured = rows.filter((r) => r.latencyUs !== null);
  return own && measured.length === 1 ? (measured[0].percentilesUs ?? null) : null;
}

function histogramCount(h: HistogramData): number {
  return h.buckets.reduce((n, [, c]) => n + c, 0);
}

/**
 * A mix's per-command rows: every ok measured round must carry the same
 * commands' histograms; each command's are merged, its requests added, its
 * ops/s per round its requests over the round's elapsed time.
 */
function commandSummaries(ok: RunRow[], rounds: number, options: SummarizeOptions): CommandSummary[] {
  const measured = ok.filter((r) => r.latencyUs !== null);
  if (measured.length === 0 || !options.mergeLatency) return [];
  const lists = measured.map((r) => r.commandHistograms ?? null);
  const first = lists[0];
  if (!first || first.length === 0) return [];
  const names = first.map((c) => c.command);
  if (lists.some((l) => !l || l.length !== names.length || l.some((c, k) => c.command !== names[k]))) return [];
  return names.map((command, k) => {
    const hs = lists.map((l) => l![k].histogram);
    const counts = hs.map(histogramCount);
    const perRound: (number | null)[] = Array.from({ length: rounds }, () => null);
    const rates: number[] = [];
    measured.forEach((r, i) => {
      if (r.elapsedSec === null || r.elapsedSec <= 0) return;
      const rate = counts[i] / r.elapsedSec;
      rates.push(rate);
      if (r.round >= 1 && r.round <= rounds) perRound[r.round - 1] = rate;
    });
    const ps = options.percentiles;
    const empty = counts.every((c) => c === 0);
    return {
      command,
      requests: counts.reduce((a, b) => a + b, 0),
      rounds: perRound,
      opsPerSec: stats(rates),
      latencyUs: empty ? null : options.mergeLatency!(hs),
      ...(ps && ps.length > 0 ? { percentilesUs: !empty && options.mergePercentiles ? options.mergePercentiles(hs, ps) : null } : {}),
    };
  });
}

function mergedLatency(rows: RunRow[], options: SummarizeOptions): LatencyUs | null {
  const measured = rows.filter((r) => r.latencyUs !== null);
  if (measured.length === 0) return null;
  const histograms = measured.map((r) => r.histogram).filter((h): h is HistogramData => h !== null && h !== undefined);
  if (options.mergeLatency && histograms.length === measured.length) return options.mergeLatency(histograms);
  return measured.length === 1 ? measured[0].latencyUs : null;
}

/** One op kind's latency over the ok rounds: their histograms of that side merged; null when a round lacks one or none sent it. */
function mergedSideLatency(rows: RunRow[], side: 'setHistogram' | 'getHistogram', options: SummarizeOptions): LatencyUs | null {
  const measured = rows.filter((r) => r.latencyUs !== null);
  if (measured.length === 0 || !options.mergeLatency) return null;
  const histograms = measured.map((r) => r[side]).filter((h): h is HistogramData => h !== null && h !== undefined);
  if (histograms.length !== measured.length || histograms.every((h) => h.buckets.length === 0)) return null;
  return options.mergeLatency(histograms);
}

/** `SET/GET` from a row's set_cmd and get_cmd flags; null for a row without flags (a target that never started). */
function commandPair(r: RunRow): string | null {
  // A weighted mix (the plan's `commands`, as JSON): `80×GET __key__ / 15×SET`.
  const mix = r.flags.commands;
  if (typeof mix === 'string' && mix.startsWith('[')) {
    try {
      const list = JSON.parse(mix) as { template: string; weight: number }[];
      if (list.length > 0) return list.map((c) => `${c.weight}×${c.template}`).join(' / ');
    } catch {
      // Not a list this version wrote: the pair below.
    }
  }
  const pair = [r.flags.set_cmd, r.flags.get_cmd].filter((c) => c !== undefined && c !== '').map(String);
  return pair.length > 0 ? pair.join('/') : null;
}

/** Ordered scenario × mode keys: the study's order first, then anything only the rows know. */
function orderedKeys(rows: RunRow[], study: Pick<StudyInfo, 'groups' | 'modes'>) {
  const keys: { group: string; scenario: string; tags: string[]; mode: string }[] = [];
  const seen = new Set<string>();
  const add = (group: string, scenario: string, tags: string[], mode: string) => {
    const id = JSON.stringify([group, scenario, mode]);
    if (seen.has(id)) return;
    seen.add(id);
    keys.push({ group, scenario, tags, mode });
  };
  const present = new Set(rows.map((r) => JSON.stringify([r.group, r.scenario, r.mode])));
  const modesOf = (group: string, scenario: string) => {
    const fromRows = rows.filter((r) => r.group === group && r.scenario === scenario).map((r) => r.mode);
    return [...study.modes.filter((m) => fromRows.includes(m)), ...fromRows.filter((m) => !study.modes.includes(m))];
  };
  for (const g of study.groups) {
    for (const s of g.scenarios) {
      for (const m of modesOf(g.title, s.name)) {
        if (present.has(JSON.stringify([g.title, s.name, m]))) add(g.title, s.name, s.tags, m);
      }
    }
  }
  for (const r of rows) add(r.group, r.scenario, r.tags, r.mode);
  return keys;
}

/**
 * One SummaryRow per scenario × mode that has rows, in the study's order.
 * Scenarios or modes with no rows yet (a study still running or interrupted)
 * are left out.
 */
export function summarize(rows: RunRow[], study: Pick<StudyInfo, 'groups' | 'modes' | 'rounds' | 'baseline'>, options: SummarizeOptions = {}): SummaryRow[] {
  const summaries = orderedKeys(rows, study).map(({ group, scenario, tags, mode }): SummaryRow => {
    const mine = rows.filter((r) => r.group === group && r.scenario === scenario && r.mode === mode);
    const ok = mine.filter((r) => r.status === 'ok' && r.opsPerSec !== null);
    const short = ok.map(shortRunReason).filter((why): why is string => why !== null);
    const lastSearch = ok.filter((r) => r.capacity).pop();
    const lastRound = Math.max(study.rounds, ...mine.map((r) => r.round));
    const rounds: RoundCell[] = [];
    for (let round = 1; round <= lastRound; round++) {
      const row = mine.filter((r) => r.round === round).pop();
      rounds.push({
        round,
        status: row ? row.status : 'missing',
        opsPerSec: row && row.status === 'ok' ? row.opsPerSec : null,
      });
    }
    return {
      group,
      scenario,
      tags,
      label: scenarioLabel({ name: scenario, tags }),
      mode,
      rounds,
      okRounds: ok.length,
      badRounds: mine.length - ok.length,
      notOkRounds: mine.filter((r) => r.status !== 'ok').map((r) => ({ round: r.round, status: r.status, reason: r.error })),
      slowConnects: mine.filter((r) => (r.connectSec ?? 0) >= SLOW_CONNECT_SEC).map((r) => ({ round: r.round, seconds: r.connectSec as number })),
      opsPerSec: stats(ok.map((r) => r.opsPerSec as number)),
      cvOpsPerSec: null,
      avgUsPerOp: stats(ok.map((r) => r.avgUsPerOp).filter((v): v is number => v !== null)),
      elapsedSec: stats(ok.map((r) => r.elapsedSec).filter((v): v is number => v !== null)),
      latencyUs: mergedLatency(ok, options),
      setLatencyUs: mergedSideLatency(ok, 'setHistogram', options),
      getLatencyUs: mergedSideLatency(ok, 'getHistogram', options),
      ...(options.percentiles && options.percentiles.length > 0
        ? {
            percentilesUs: mergedPercentiles(ok, (r) => r.histogram, options, true),
            setPercentilesUs: mergedPercentiles(ok, (r) => r.setHistogram, options, false),
            getPercentilesUs: mergedPercentiles(ok, (r) => r.getHistogram, options, false),
          }
        : {}),
      requests: ok.reduce((a, r) => a + r.answered, 0),
      perCommand: commandSummaries(ok, lastRound, options),
      shortRounds: short.length,
      shortReason: short[0] ?? null,
      commands: [...new Set(mine.map(commandPair).filter((c): c is string => c !== null))],
      verifyGet: mine.some((r) => r.flags.verify_get === true || r.flags.verify_get === 'true'),
      mismatchRounds: mine.filter((r) => r.status === 'mismatches').length,
      ratioToBaseline: null,
      ...(lastSearch?.capacity ? { capacity: { round: lastSearch.round, run: lastSearch.capacity } } : {}),
    };
  });
  for (const s of summaries) s.cvOpsPerSec = coefficientOfVariation(s.opsPerSec);
  if (study.baseline) {
    for (const s of summaries) s.ratioToBaseline = ratioTo(summaries, study.baseline, s);
  }
  return summaries;
}

/** This scenario's mean ops/s over the baseline's, same mode; null when either has no ok round. */
export function ratioTo(summaries: SummaryRow[], baseline: string, s: SummaryRow): number | null {
  const base = summaries.find((b) => b.scenario === baseline && b.mode === s.mode);
  const a = s.opsPerSec.mean;
  const b = base?.opsPerSec.mean ?? null;
  if (a === null || b === null || b === 0) return null;
  return a / b;
}
