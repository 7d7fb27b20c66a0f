/**
 * A self-contained HTML report: one file with inline CSS and inline SVG
 * charts, no script and nothing fetched, so it opens offline, attaches to a
 * mail and survives being copied next to the CSVs it summarises.
 */
import type { SummaryRow } from './aggregate.js';
import { labelsFor, localDateTime, type Labels } from './labels.js';
import { capacityChart } from './capacity.js';
import { byGroup, capacityLines, groupLine, preambleLines, shortRowsLine, tableCells } from './markdown.js';
import type { Lang, StudyInfo } from './rows.js';
import { escapeXml, latencyChart, throughputChart } from './svg.js';

const STYLE = `
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", "Noto Sans", "Noto Sans CJK SC", sans-serif; margin: 24px auto; max-width: 960px; padding: 0 16px; color: #222; }
h1 { font-size: 22px; margin: 0 0 8px; }
h2 { font-size: 18px; margin: 32px 0 8px; border-bottom: 1px solid #ddd; padding-bottom: 4px; }
h3 { font-size: 15px; margin: 18px 0 6px; color: #444; }
ul.meta { margin: 0; padding-left: 18px; color: #444; }
p.note { color: #666; font-size: 12px; margin: 4px 0; }
p.group { color: #444; margin: 4px 0; }
p.warn, li.warn { color: #a35a00; }
table { border-collapse: collapse; margin: 8px 0 4px; font-variant-numeric: tabular-nums; }
th, td { border: 1px solid #ddd; padding: 3px 8px; }
th { background: #f4f4f4; font-weight: 600; white-space: nowrap; }
td.num { text-align: right; }
td.bad { color: #c0392b; }
svg.chart { display: block; max-width: 100%; height: auto; margin: 6px 0; }
svg .grid { stroke: #e6e6e6; stroke-width: 1; }
svg .tick, svg .legend, svg .value, svg .axis { font-size: 11px; fill: #555; }
svg .label { font-size: 12px; fill: #222; }
svg .nodata { font-size: 12px; fill: #c0392b; }
svg .whisker { stroke: #222; stroke-width: 1.3; }
svg .round { fill: #fff; stroke: #222; stroke-width: 1; }
svg .span { stroke: #aaa; stroke-width: 2; }
p.answer { font-size: 15px; font-weight: 600; margin: 4px 0; }
`;

function htmlTable(summaries: SummaryRow[], lang: Lang, baseline?: string, capacity?: string): string {
  const { header, rows } = tableCells(summaries, { lang, baseline, latency: true, capacity });
  const t = labelsFor(lang);
  const head = `<tr>${header.map((h) => `<th>${escapeXml(h)}</th>`).join('')}</tr>`;
  const body = rows
    .map(
      (r) =>
        `<tr>${r
          .map((c, i) => {
            const cls = i < 2 ? '' : c === t.failed ? ' class="num bad"' : ' class="num"';
            return `<td${cls}>${escapeXml(c)}</td>`;
          })
          .join('')}</tr>`,
    )
    .join('\n');
  return `<table>\n<thead>${head}</thead>\n<tbody>\n${body}\n</tbody>\n</table>`;
}

function shortNote(summaries: SummaryRow[], t: Labels): string {
  const line = shortRowsLine(summaries, t);
  return line ? `<p class="warn">${escapeXml(line)}</p>` : '';
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
${htmlTable(g.summaries, lang, study.baseline, slo)}
<p class="note">${escapeXml(t.capacityNote)}</p>
${charts.join('\n')}
</section>`;
}

export function htmlReport(summaries: SummaryRow[], study: StudyInfo, lang: Lang = 'en'): string {
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
${htmlTable(g.summaries, lang, study.baseline)}
${shortNote(g.summaries, t)}
</section>`,
  );
  return `<!doctype html>
<html lang="${lang === 'zh' ? 'zh-CN' : 'en'}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeXml(title)}</title>
<style>${STYLE}</style>
</head>
<body>
<h1>${escapeXml(title)}</h1>
<ul class="meta">
${preambleLines(study, t, summaries)
  .map((l) => preambleItem(l, study, t, shortWarning))
  .join('\n')}
</ul>
${sections.join('\n')}
</body>
</html>
`;
}
