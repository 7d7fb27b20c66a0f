/**
 * A self-contained HTML report: one file with inline CSS and inline SVG
 * charts, no script and nothing fetched, so it opens offline, attaches to a
 * mail and survives being copied next to the CSVs it summarises.
 */
import type { SummaryRow } from './aggregate.js';
import { labelsFor, localDateTime, type Labels } from './labels.js';
import { capacityChart } from './capacity.js';
import { byGroup, capacityLines, commandTableCells, groupLine, preambleLines, roundNoteLines, shortRowsLine, tableCells } from './markdown.js';
import type { Lang, RunRow, StudyInfo } from './rows.js';
import { latencyPoints, lineColor, overTimeChart, seriesEnd, throughputPoints, type ChartLine } from './series.js';
import { htmlPage, htmlTable } from './page.js';
import { escapeXml, latencyChart, throughputChart } from './svg.js';

function summaryTable(summaries: SummaryRow[], lang: Lang, baseline?: string, capacity?: string, percentiles?: readonly number[]): string {
  const { header, rows } = tableCells(summaries, { lang, baseline, latency: true, capacity, percentiles });
  const t = labelsFor(lang);
  return htmlTable(header, rows, (r, c) => (c < 2 ? '' : rows[r][c] === t.failed ? 'num bad' : 'num'));
}

/** A command mix's small table per command under the group's table; nothing without a mix. */
function commandTable(summaries: SummaryRow[], lang: Lang, percentiles?: readonly number[]): string {
  const cells = commandTableCells(summaries, { lang, percentiles });
  if (!cells) return '';
  const t = labelsFor(lang);
  return `<h3>${escapeXml(t.perCommand)}</h3>\n${htmlTable(cells.header, cells.rows, (_, c) => (c < 3 ? '' : 'num'))}`;
}

function shortNote(summaries: SummaryRow[], t: Labels): string {
  const line = shortRowsLine(summaries, t);
  const notes = roundNoteLines(summaries, t).map((l) => `<p class="warn">${escapeXml(l)}</p>`);
  return [...(line ? [`<p class="warn">${escapeXml(line)}</p>`] : []), ...notes].join('\n');
}

/** A preamble line; the CSV files become links (relative, as the caller gives them: next to this page). */
function preambleItem(line: string, study: StudyInfo, t: Labels, warning: string | null): string {
  for (const [label, file] of [
    [t.detail, study.files?.detail],
    [t.summary, study.files?.summary],
  ] as const) {
    if (file && line === `${label}: ${file}`) return `<li>${escapeXml(label)}: <a href="${escapeXml(encodeURI(file))}">${escapeXml(file)}</a></li>`;
  }
  return `<li${line === warning ? ' class="warn"' : ''}>${escapeXml(line)}</li>`;
}

/**
 * Per mode of the group, each ok round's time series over time: throughput
 * and p99, a line per scenario and round (a colour per scenario). Nothing
 * when no row has a series (rows from before series existed).
 */
function overTimeCharts(summaries: SummaryRow[], rows: RunRow[], t: Labels): string {
  const scenarios = [...new Set(summaries.map((s) => s.scenario))];
  const label = new Map(summaries.map((s) => [s.scenario, s.label]));
  const out: string[] = [];
  for (const mode of [...new Set(summaries.map((s) => s.mode))]) {
    const runs = rows.filter((r) => r.mode === mode && r.status === 'ok' && scenarios.includes(r.scenario) && (r.series?.length ?? 0) > 0);
    if (runs.length === 0) continue;
    const many = Math.max(...scenarios.map((sc) => runs.filter((r) => r.scenario === sc).length)) > 1;
    const line = (r: RunRow, points: ChartLine['points']): ChartLine => ({
      name: `${label.get(r.scenario) ?? r.scenario} · ${t.round(r.round)}`,
      color: lineColor(scenarios.indexOf(r.scenario)),
      points,
      faint: many,
      data: { scenario: r.scenario, target: r.target, mode: r.mode, round: String(r.round) },
    });
    const legend = scenarios.filter((sc) => runs.some((r) => r.scenario === sc)).map((sc) => ({ text: label.get(sc) ?? sc, color: lineColor(scenarios.indexOf(sc)) }));
    const common = { legend, xLabel: t.secondsAxis, noData: t.noData, xEnd: Math.max(...runs.map((r) => seriesEnd(r.series!))) };
    out.push(`<h3>${escapeXml(t.overTimeThroughput(mode))}</h3>`);
    out.push(overTimeChart({ ...common, kind: 'throughput', yLabel: t.intervalOpsAxis, ariaLabel: t.overTimeThroughput(mode), lines: runs.map((r) => line(r, throughputPoints(r.series!))) }));
    out.push(`<h3>${escapeXml(t.overTimeLatency(mode))}</h3>`);
    out.push(overTimeChart({ ...common, kind: 'latency', yLabel: t.intervalP99Axis, ariaLabel: t.overTimeLatency(mode), lines: runs.map((r) => line(r, latencyPoints(r.series!, 'p99'))) }));
  }
  if (out.length > 0) out.push(`<p class="note">${escapeXml(t.overTimeNote)}</p>`);
  return out.join('\n');
}

/** A capacity study's group: the sentence per mode, the capacities' bars, the table, and each target's search drawn. */
function capacitySection(g: { title: string; summaries: SummaryRow[] }, study: StudyInfo, t: Labels, lang: Lang, scaleMax: number, slo: string): string {
  const charts = g.summaries
    .filter((s) => s.capacity)
    .map((s) => {
      const c = s.capacity!;
      return `<h3>${escapeXml(t.capacityOf(s.label, s.mode, c.round))}</h3>\n${capacityChart({ points: c.run.steps, slo: c.run.bounds, capacity: c.run.capacity })}${c.run.limit ? `\n<p class="note">${escapeXml(c.run.limit)}</p>` : ''}`;
    });
  return `<section class="group">
<h2>${escapeXml(g.title)}</h2>
<p class="group">${escapeXml(groupLine(g.summaries, t, lang === 'zh' ? '：' : ': '))}</p>
${capacityLines(g.summaries, slo, t, study.baseline)
  .map((l) => `<p class="answer">${escapeXml(l)}</p>`)
  .join('\n')}
<h3>${escapeXml(t.capacityChart)}</h3>
${throughputChart(g.summaries, study.modes, t, scaleMax)}
<p class="note">${escapeXml(t.spreadNote)}</p>
${summaryTable(g.summaries, lang, study.baseline, slo)}
<p class="note">${escapeXml(t.capacityNote)}</p>
${charts.join('\n')}
</section>`;
}

/** `rows`: the study's runs, whose time series draw the over-time charts (none without them). */
export function htmlReport(summaries: SummaryRow[], study: StudyInfo, lang: Lang = 'en', rows: RunRow[] = []): string {
  const t = labelsFor(lang);
  const groups = byGroup(summaries, study);
  // One throughput axis and one latency axis for the whole page, so bars in
  // different groups (kvstore next to Redis) compare by eye.
  const scaleMax = Math.max(0, ...summaries.map((s) => s.opsPerSec.max ?? 0));
  const lat = summaries.flatMap((s) => (s.latencyUs ? [s.latencyUs.p50, s.latencyUs.p999] : [])).filter((v) => v > 0);
  const range = lat.length ? { lo: Math.min(...lat), hi: Math.max(...lat) } : undefined;
  const title = t.heading(study.name, study.rounds, localDateTime(study.startedAt));
  const short = summaries.reduce((a, s) => a + s.shortRounds, 0);
  const shortWarning = short > 0 ? t.shortRuns(short, summaries.reduce((a, s) => a + s.okRounds, 0)) : null;
  const slo = study.capacity?.slo;
  const sections = groups.map((g) =>
    slo !== undefined
      ? capacitySection(g, study, t, lang, scaleMax, slo)
      : `<section class="group">
<h2>${escapeXml(g.title)}</h2>
<p class="group">${escapeXml(groupLine(g.summaries, t, lang === 'zh' ? '：' : ': '))}</p>
<h3>${escapeXml(t.throughputChart)}</h3>
${throughputChart(g.summaries, study.modes, t, scaleMax)}
<p class="note">${escapeXml(t.spreadNote)}</p>
<h3>${escapeXml(t.latencyChart)}</h3>
${latencyChart(g.summaries, t, range)}
<p class="note">${escapeXml(t.latencyNote)}</p>
${overTimeCharts(g.summaries, rows, t)}
${summaryTable(g.summaries, lang, study.baseline, undefined, study.percentiles)}
${commandTable(g.summaries, lang, study.percentiles)}
${shortNote(g.summaries, t)}
</section>`,
  );
  // The series CSV (each run's intervals, what the over-time charts draw) is linked here only: the Markdown names the two tables.
  const series = study.files?.series;
  const seriesItem = series ? `\n<li>${escapeXml(t.seriesFile)}: <a href="${escapeXml(encodeURI(series))}">${escapeXml(series)}</a></li>` : '';
  const body = `<ul class="meta">
${preambleLines(study, t, summaries)
  .map((l) => preambleItem(l, study, t, shortWarning))
  .join('\n')}${seriesItem}
</ul>
${sections.join('\n')}`;
  return htmlPage({ title, lang: lang === 'zh' ? 'zh-CN' : 'en', body });
}
