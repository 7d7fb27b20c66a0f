/**
 * One run's page (`respbench --html <file>`, `respbench merge … --html`):
 * what ran (metadata, Plan, target), the figures table, and the run's time
 * series drawn over time — throughput, p50, p99 and max — in total and per
 * command. Self-contained like the study's page (page.ts).
 */
import { htmlPage, htmlTable, metaList } from './page.js';
import { latencyPoints, lineColor, overTimeChart, pointTime, seriesEnd, throughputPoints, type ChartLine } from './series.js';
import type { SeriesPoint } from './rows.js';
import { escapeXml } from './svg.js';

export interface RunPage {
  title: string;
  /** Lines under the title: tool and version, engine, start, load machine, command line, target, workload. */
  meta: string[];
  /** Lines shown in warning colour (a failure, an interruption, merge's warnings). */
  warnings: string[];
  /** The figures per command and Totals. */
  table: { header: string[]; rows: string[][]; numeric: boolean[] };
  series: SeriesPoint[];
  /** The figures as the terminal shows them (counters, notes, failures). */
  figures: string;
  /** The Plan, as JSON text. */
  plan: string;
  /**
   * Where each request's latency starts: `written` (closed loop: the request
   * written) or `intended` (--rate: its intended send time on the schedule,
   * so a request sent late counts its wait). Default `written`.
   */
  latencyFrom?: 'written' | 'intended';
}

export const X_AXIS = 'seconds into the measured phase';
export const THROUGHPUT_AXIS = 'ops/s per interval';
export const LATENCY_AXIS = 'latency per interval (log scale)';

/** The two over-time charts of one run: throughput (total and per command) and latency (p99, p50 and max; p99 per command). */
export function runCharts(series: SeriesPoint[]): { throughput: string; latency: string } {
  const commands = series[0]?.perCommand?.map((c) => c.command) ?? [];
  const perCommand = commands.length > 1;
  const commandSeries = (i: number): SeriesPoint[] =>
    series.map((p) => {
      const c = p.perCommand?.[i];
      return { ...p, requests: c?.requests ?? 0, opsPerSec: c?.opsPerSec ?? 0, latencyUs: c?.latencyUs ?? { p50: 0, p99: 0, max: 0 } };
    });
  const tput: ChartLine[] = [{ name: perCommand ? 'Totals' : 'ops/s', color: '#222', points: throughputPoints(series), data: { command: 'Totals' } }];
  const lat: ChartLine[] = [
    { name: 'p99', color: '#e08a2c', points: latencyPoints(series, 'p99'), data: { command: 'Totals', percentile: 'p99' } },
    { name: 'p50', color: '#3b6fb6', points: latencyPoints(series, 'p50'), dashed: true, data: { command: 'Totals', percentile: 'p50' } },
    // A stall of a few requests hides under p99; the slowest reply shows it.
    { name: 'max', color: '#999', points: latencyPoints(series, 'max'), faint: true, dashed: true, data: { command: 'Totals', percentile: 'max' } },
  ];
  if (perCommand) {
    commands.forEach((name, i) => {
      const s = commandSeries(i);
      const color = lineColor(i + 2);
      tput.push({ name, color, points: throughputPoints(s), data: { command: name } });
      lat.push({ name: `${name} p99`, color, points: latencyPoints(s, 'p99'), faint: true, data: { command: name, percentile: 'p99' } });
    });
  }
  const xEnd = seriesEnd(series);
  return {
    throughput: overTimeChart({ kind: 'throughput', xEnd, lines: tput, xLabel: X_AXIS, yLabel: THROUGHPUT_AXIS, ariaLabel: 'throughput over time', noData: 'no interval recorded' }),
    latency: overTimeChart({ kind: 'latency', xEnd, lines: lat, xLabel: X_AXIS, yLabel: LATENCY_AXIS, ariaLabel: 'latency over time', noData: 'no interval recorded' }),
  };
}

/** The intervals as a table under the charts: the figures the dots stand for. */
function intervalTable(series: SeriesPoint[]): string {
  const f = (v: number, d: number) => v.toFixed(d);
  const rows = series.map((p) => [p.time ?? '', f(pointTime(p) - p.durationSec / 2, 3), f(p.durationSec, 3), String(p.requests), f(p.opsPerSec, 1), f(p.latencyUs.p50, 1), f(p.latencyUs.p99, 1), f(p.latencyUs.max, 1), String(p.errors)]);
  return htmlTable(['start (UTC)', 't (s)', 'duration (s)', 'requests', 'ops/s', 'p50 us', 'p99 us', 'max us', 'errors'], rows, (_r, c) => (c === 0 ? '' : 'num'));
}

export function runHtml(page: RunPage): string {
  const charts = runCharts(page.series);
  const table = htmlTable(page.table.header, page.table.rows, (_r, c) => (page.table.numeric[c] ? 'num' : ''));
  const body = `${metaList([...page.meta, ...page.warnings], (_l, i) => (i >= page.meta.length ? 'warn' : null))}
<h2>Figures</h2>
${table}
<h2>Over time</h2>
<h3>Throughput</h3>
${charts.throughput}
<h3>Latency: p99, p50 and max</h3>
${charts.latency}
<p class="note">One dot per interval (${page.series.length}), at its middle; latency from ${page.latencyFrom === 'intended' ? "each request's intended send time (--rate's schedule)" : 'request written'} to reply parsed, per request, on a log axis; a hollow dot on the bottom edge is an interval without replies.</p>
<details><summary>The intervals</summary>
${intervalTable(page.series)}
</details>
<h2>As printed</h2>
<pre>${escapeXml(page.figures)}</pre>
<h2>Plan</h2>
<pre>${escapeXml(page.plan)}</pre>`;
  return htmlPage({ title: page.title, body });
}
