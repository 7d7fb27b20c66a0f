/**
 * What `respbench capacity` prints and writes: a header, a row per step as
 * it finishes, the answer (the highest rate that met the SLO, the bracket,
 * who was the limit), `--json` and the `--html` page.
 */
import { capacityHtml, type CapacityPage } from '@respbench/report';
import type { EngineName, Plan } from '../engine-js/plan.js';
import { clusterText, describeWorkload } from '../output.js';
import { printable, printableTarget } from '../printable.js';
import type { CapacityReport, Probe } from './driver.js';
import { describeSlo, formatShare, type Slo } from './slo.js';
import { boundStep, type CapacityStep } from './step.js';

/** The latency columns: p50, p99, p99.9, and any other percentile the SLO names. */
function latencyColumns(slo: Slo): { name: string; of: (s: CapacityStep) => number }[] {
  const cols = [
    { name: 'p50', of: (s: CapacityStep) => s.latencyUs.p50 },
    { name: 'p99', of: (s: CapacityStep) => s.latencyUs.p99 },
    { name: 'p99.9', of: (s: CapacityStep) => s.latencyUs.p999 },
  ];
  for (const c of slo.latency) {
    if (!cols.some((x) => Number(x.name.slice(1)) === c.percentile)) cols.push({ name: c.name, of: (s) => s.sloLatencyUs[c.name] });
  }
  return cols.sort((a, b) => Number(a.name.slice(1)) - Number(b.name.slice(1)));
}

function ms(us: number): string {
  return (us / 1000).toFixed(3);
}

function seconds(msValue: number): string {
  return `${Number((msValue / 1000).toPrecision(4))} s`;
}

/** The workload line without the step's rate and length (the header says those). */
function workloadText(plan: Plan): string {
  return describeWorkload({ ...plan, rate: 0 }).replace(/, (for [\d.]+ s|\d+ requests),/, ',');
}

export function capacityHeader(engine: EngineName, plan: Plan, slo: Slo, s: { stepDurationMs: number; warmupMs: number; precision: number; retry: boolean }): string {
  return [
    `respbench capacity · engine ${engine} · target ${printableTarget(plan.host, plan.port)}${clusterText(plan)}`,
    `workload: ${workloadText(plan)}`,
    `SLO: ${describeSlo(slo)} (latency from when each request was due)`,
    `steps: ${seconds(s.stepDurationMs)} each after ${seconds(s.warmupMs)} warmup, open loop; until the bracket is within ${Number((s.precision * 100).toPrecision(4))}%${s.retry ? '; a step that kept its rate but broke the SLO runs once more' : ''}`,
  ].join('\n');
}

export function probeLine(p: Probe, startRate: number): string {
  return `probe: closed loop for ${p.durationSec.toFixed(1)} s: ${Math.round(p.opsPerSec)} ops/s → ramp from ${startRate}/s`;
}

const WIDTHS = { step: 4, target: 10, achieved: 10, lat: 10, errors: 7, met: 4 };

export function tableHeader(slo: Slo): string {
  const lat = latencyColumns(slo).map((c) => `${c.name} ms`.padStart(WIDTHS.lat));
  return ['step'.padStart(WIDTHS.step), 'target/s'.padStart(WIDTHS.target), 'achieved/s'.padStart(WIDTHS.achieved), ...lat, 'errors'.padStart(WIDTHS.errors), ' met'].join('  ');
}

export function stepRow(s: CapacityStep, slo: Slo): string {
  const lat = latencyColumns(slo).map((c) => ms(c.of(s)).padStart(WIDTHS.lat));
  const cells = [
    String(s.step).padStart(WIDTHS.step),
    String(s.targetRate).padStart(WIDTHS.target),
    s.achievedRate.toFixed(1).padStart(WIDTHS.achieved),
    ...lat,
    String(s.errors).padStart(WIDTHS.errors),
    (s.met ? 'yes' : 'no').padStart(WIDTHS.met),
  ];
  return `${cells.join('  ')}${s.met ? '' : `  ${s.failedBecause.join('; ')}${s.retried ? (s.clientLagBrokeSlo ? " (the client's own lag broke it: run again)" : ' (rate kept: run again)') : ''}`}`;
}

function rate(n: number): string {
  return `${n}/s`;
}

/** The answer in one line: the capacity with its SLO, or why there is none. */
export function answerLine(r: CapacityReport, slo: Slo): string {
  const { met, failed } = r.bracket;
  const sloText = describeSlo(slo);
  if (r.end === 'client-lag') {
    const bound = boundStep(r.steps, r.bracket);
    const why = bound?.clientLag?.tighterThanSendsUs !== undefined ? 'the SLO is tighter than the client can time its sends' : "failed on the client's own lag or the machine's stalls, not the server";
    return `capacity: not measured: the lowest rate that failed (${rate(failed!)}) ${why} (met at ${met === null ? 'none' : rate(met)}); see the limit line`;
  }
  if (r.end === 'interrupted' || r.end === 'failed') {
    const so = `bracket so far: met ${met === null ? 'none yet' : rate(met)}, failed ${failed === null ? 'none yet' : rate(failed)}`;
    return r.end === 'interrupted' ? `interrupted (${r.interrupted?.signal ?? 'signal'}): ${so}` : `stopped: ${so}`;
  }
  if (met === null) return `capacity: none: not even ${rate(r.steps.reduce((a, s) => Math.min(a, s.targetRate), Infinity))} met ${sloText}`;
  const within = failed === null ? '' : ` (met at ${rate(met)}, failed at ${rate(failed)}: within ${Number((((failed - met) / met) * 100).toPrecision(3))}%)`;
  const ceiling = r.end === 'ceiling' ? ' (the highest rate the engines take: the server may take more)' : '';
  return `capacity: ${met} ops/s with ${sloText}${within}${ceiling}`;
}

/** Who held back the lowest rate that failed. */
export function limitLine(r: CapacityReport): string | null {
  if (!r.limit) return null;
  const who = r.limit.by === 'client' ? 'the client (respbench), not the server: the server may take more than this' : 'the server';
  return `limit at ${rate(r.limit.atRate)}: ${who}; ${r.limit.reason}`;
}

/** The search as JSON: one line (a result file compare reads), indented with `pretty`. */
export function formatCapacityJson(r: CapacityReport, pretty = false): string {
  return JSON.stringify(r, null, pretty ? 2 : undefined);
}

/** The --html page. */
export function capacityPage(r: CapacityReport, slo: Slo): string {
  const cols = latencyColumns(slo);
  const header = ['step', 'target/s', 'achieved/s', ...cols.map((c) => `${c.name} ms`), 'errors', 'met', 'why not / limit'];
  const rows = r.steps.map((s) => [
    String(s.step),
    String(s.targetRate),
    s.achievedRate.toFixed(1),
    ...cols.map((c) => ms(c.of(s))),
    String(s.errors),
    s.met ? 'yes' : 'no',
    s.met ? '' : printable(`${s.failedBecause.join('; ')}${s.retried ? ' (rate kept: run again)' : s.limit ? ` · limit: ${s.limit} (${s.limitReason})` : ''}`),
  ]);
  const metCol = header.indexOf('met');
  const page: CapacityPage = {
    title: `respbench capacity · ${printableTarget(r.target.host, r.target.port)}`,
    meta: [
      `engine ${r.engine}`,
      `workload: ${workloadText(r.plan)}`,
      `SLO: ${describeSlo(slo)} (latency from when each request was due)`,
      `steps of ${seconds(r.settings.stepDurationMs)} after ${seconds(r.settings.warmupMs)} warmup; precision ${formatShare(r.settings.precision)}${r.settings.retry ? '; a step that kept its rate but broke the SLO is run once more' : ''}`,
      ...(r.probe ? [`closed-loop probe: ${Math.round(r.probe.opsPerSec)} ops/s; ramp from ${r.startRate}/s`] : []),
    ].map(printable),
    answer: answerLine(r, slo),
    notes: [limitLine(r), r.failure].filter((x): x is string => x !== null).map(printable),
    chart: {
      points: r.steps.filter((s) => !s.retried).map((s) => ({ targetRate: s.targetRate, achievedRate: s.achievedRate, latencyUs: s.latencyUs, met: s.met })),
      slo: slo.latency.map((c) => ({ name: c.name, maxUs: c.maxUs })),
      capacity: r.capacity,
    },
    table: { header, rows, numeric: header.map((_, j) => j > 0 && j < header.length - 1 && j !== metCol), bad: (i, j) => j === metCol && !r.steps[i].met },
  };
  return capacityHtml(page);
}
