/**
 * A capacity search drawn and written up: latency percentiles against the
 * achieved throughput of each step (the load curve), the SLO's bounds as
 * horizontal lines and the capacity found as a vertical one, as inline SVG;
 * and a self-contained HTML page around it (`respbench capacity --html`).
 */
import { escapeXml, niceCeil, shortNumber } from './svg.js';

export interface CapacityPoint {
  targetRate: number;
  achievedRate: number;
  latencyUs: { p50: number; p99: number; p999: number };
  met: boolean;
}

export interface CapacityChartInput {
  points: CapacityPoint[];
  /** The SLO's latency bounds. */
  slo: { name: string; maxUs: number }[];
  /** The highest rate that met the SLO; null when none did. */
  capacity: number | null;
}

const WIDTH = 900;
const HEIGHT = 420;
const LEFT = 70;
const RIGHT = 30;
const TOP = 34;
const BOTTOM = 48;
const SERIES = [
  ['p50', 'p50', '#3b6fb6'],
  ['p99', 'p99', '#e08a2c'],
  ['p999', 'p99.9', '#c0392b'],
] as const;

function sloColor(name: string): string {
  return SERIES.find(([, n]) => n === name)?.[2] ?? '#7a7a7a';
}

/** Log-scale ticks: 1, 2, 5 × 10^k within [lo, hi]. */
function logTicks(lo: number, hi: number): number[] {
  const out: number[] = [];
  for (let k = Math.floor(Math.log10(lo)); k <= Math.ceil(Math.log10(hi)); k++) {
    for (const m of [1, 2, 5]) {
      const v = m * 10 ** k;
      if (v >= lo && v <= hi) out.push(v);
    }
  }
  return out;
}

function usLabel(us: number): string {
  if (us >= 1e6) return `${shortNumber(us / 1e6)} s`;
  if (us >= 1000) return `${shortNumber(us / 1000)} ms`;
  return `${shortNumber(us)} us`;
}

/** Latency (log axis, us) against achieved ops/s, one line per percentile in the order the load rose. */
export function capacityChart(input: CapacityChartInput): string {
  const pts = [...input.points].sort((a, b) => a.targetRate - b.targetRate);
  const lat = pts.flatMap((p) => SERIES.map(([k]) => p.latencyUs[k])).filter((v) => v > 0);
  const bounds = input.slo.map((s) => s.maxUs);
  const lo = 10 ** Math.floor(Math.log10(Math.max(Math.min(...lat, ...bounds), 0.001)));
  const hi = niceCeil(Math.max(...lat, ...bounds, lo * 10));
  const xTop = niceCeil(Math.max(1, ...pts.map((p) => p.achievedRate), input.capacity ?? 0));
  const plotW = WIDTH - LEFT - RIGHT;
  const plotH = HEIGHT - TOP - BOTTOM;
  const x = (v: number) => LEFT + (v / xTop) * plotW;
  const y = (us: number) => TOP + plotH - ((Math.log10(Math.max(us, lo)) - Math.log10(lo)) / (Math.log10(hi) - Math.log10(lo))) * plotH;
  const parts: string[] = [];
  // Legend.
  let lx = LEFT;
  for (const [, name, color] of SERIES) {
    parts.push(`<circle cx="${lx + 6}" cy="14" r="5" fill="${color}"/><text x="${lx + 17}" y="18" class="legend">${name}</text>`);
    lx += 70;
  }
  parts.push(`<text x="${lx}" y="18" class="legend">filled: met the SLO · hollow: did not</text>`);
  // Axes and grid.
  const xStep = xTop / 5;
  for (let i = 0; i <= 5; i++) {
    const v = xStep * i;
    parts.push(`<line x1="${x(v).toFixed(1)}" y1="${TOP}" x2="${x(v).toFixed(1)}" y2="${TOP + plotH}" class="grid"/>`);
    parts.push(`<text x="${x(v).toFixed(1)}" y="${TOP + plotH + 16}" class="tick" text-anchor="middle">${shortNumber(v)}</text>`);
  }
  for (const v of logTicks(lo, hi)) {
    parts.push(`<line x1="${LEFT}" y1="${y(v).toFixed(1)}" x2="${LEFT + plotW}" y2="${y(v).toFixed(1)}" class="grid"/>`);
    parts.push(`<text x="${LEFT - 6}" y="${(y(v) + 4).toFixed(1)}" class="tick" text-anchor="end">${usLabel(v)}</text>`);
  }
  parts.push(`<text x="${LEFT + plotW / 2}" y="${HEIGHT - 6}" class="axis" text-anchor="middle">achieved throughput (ops/s)</text>`);
  parts.push(`<text x="14" y="${TOP + plotH / 2}" class="axis" text-anchor="middle" transform="rotate(-90 14 ${TOP + plotH / 2})">latency from the intended send</text>`);
  // The SLO's bounds.
  for (const s of input.slo) {
    const sy = y(s.maxUs).toFixed(1);
    parts.push(`<g class="slo" data-name="${escapeXml(s.name)}"><line x1="${LEFT}" y1="${sy}" x2="${LEFT + plotW}" y2="${sy}" stroke="${sloColor(s.name)}" stroke-width="1.5" stroke-dasharray="6 4"/>`);
    parts.push(`<text x="${LEFT + plotW - 4}" y="${(Number(sy) - 4).toFixed(1)}" class="legend" text-anchor="end">SLO ${escapeXml(s.name)} ≤ ${usLabel(s.maxUs)}</text></g>`);
  }
  // The capacity found.
  if (input.capacity !== null) {
    const cx = x(input.capacity).toFixed(1);
    parts.push(`<g class="capacity"><line x1="${cx}" y1="${TOP}" x2="${cx}" y2="${TOP + plotH}" stroke="#222" stroke-width="1.5" stroke-dasharray="2 3"/>`);
    parts.push(`<text x="${(Number(cx) - 4).toFixed(1)}" y="${TOP + 12}" class="label" text-anchor="end">capacity ${Math.round(input.capacity).toLocaleString('en-US')}/s</text></g>`);
  }
  // One line per percentile, in the order the load rose.
  for (const [k, name, color] of SERIES) {
    const line = pts.filter((p) => p.latencyUs[k] > 0).map((p) => `${x(p.achievedRate).toFixed(1)},${y(p.latencyUs[k]).toFixed(1)}`);
    if (line.length > 1) parts.push(`<polyline points="${line.join(' ')}" fill="none" stroke="${color}" stroke-width="1.5" stroke-opacity="0.7"/>`);
    for (const p of pts) {
      if (!(p.latencyUs[k] > 0)) continue;
      const title = `target ${shortNumber(p.targetRate)}/s, achieved ${shortNumber(p.achievedRate)}/s: ${name} ${usLabel(p.latencyUs[k])}${p.met ? '' : ' (did not meet the SLO)'}`;
      const fill = p.met ? color : '#fff';
      parts.push(`<circle class="point" data-series="${name}" cx="${x(p.achievedRate).toFixed(1)}" cy="${y(p.latencyUs[k]).toFixed(1)}" r="4" fill="${fill}" stroke="${color}" stroke-width="1.5"><title>${escapeXml(title)}</title></circle>`);
    }
  }
  if (pts.length === 0) parts.push(`<text x="${LEFT + 8}" y="${TOP + 20}" class="nodata">no step finished</text>`);
  return `<svg class="chart capacity" xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${HEIGHT}" viewBox="0 0 ${WIDTH} ${HEIGHT}" role="img" aria-label="latency percentiles against achieved throughput">${parts.join('')}</svg>`;
}

const STYLE = `
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", "Noto Sans", sans-serif; margin: 24px auto; max-width: 960px; padding: 0 16px; color: #222; }
h1 { font-size: 22px; margin: 0 0 8px; }
h2 { font-size: 18px; margin: 28px 0 8px; border-bottom: 1px solid #ddd; padding-bottom: 4px; }
ul.meta { margin: 0; padding-left: 18px; color: #444; }
p.answer { font-size: 16px; font-weight: 600; }
table { border-collapse: collapse; margin: 8px 0 4px; font-variant-numeric: tabular-nums; }
th, td { border: 1px solid #ddd; padding: 3px 8px; }
th { background: #f4f4f4; font-weight: 600; white-space: nowrap; }
td.num { text-align: right; }
td.bad { color: #c0392b; }
svg.chart { display: block; max-width: 100%; height: auto; margin: 6px 0; }
svg .grid { stroke: #e6e6e6; stroke-width: 1; }
svg .tick, svg .legend, svg .axis { font-size: 11px; fill: #555; }
svg .label { font-size: 12px; fill: #222; }
svg .nodata { font-size: 12px; fill: #c0392b; }
`;

export interface CapacityPage {
  title: string;
  /** Lines under the title: target, engine, workload, SLO. */
  meta: string[];
  /** The answer, in one sentence. */
  answer: string;
  /** More lines after it (the limit, an interruption). */
  notes: string[];
  chart: CapacityChartInput;
  /** `bad(row, column)`: a cell to show in red (the met? cell of a step that did not). */
  table: { header: string[]; rows: string[][]; numeric: boolean[]; bad: (row: number, column: number) => boolean };
}

/** One page: the answer, the chart and the table of steps; no script, nothing fetched. */
export function capacityHtml(page: CapacityPage): string {
  const head = `<tr>${page.table.header.map((h) => `<th>${escapeXml(h)}</th>`).join('')}</tr>`;
  const body = page.table.rows
    .map((r, i) => {
      const cells = r.map((c, j) => {
        const cls = [page.table.numeric[j] ? 'num' : '', page.table.bad(i, j) ? 'bad' : ''].filter((x) => x !== '').join(' ');
        return `<td${cls ? ` class="${cls}"` : ''}>${escapeXml(c)}</td>`;
      });
      return `<tr>${cells.join('')}</tr>`;
    })
    .join('\n');
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeXml(page.title)}</title>
<style>${STYLE}</style>
</head>
<body>
<h1>${escapeXml(page.title)}</h1>
<ul class="meta">
${page.meta.map((l) => `<li>${escapeXml(l)}</li>`).join('\n')}
</ul>
<p class="answer">${escapeXml(page.answer)}</p>
${page.notes.map((n) => `<p>${escapeXml(n)}</p>`).join('\n')}
<h2>Latency against throughput</h2>
${capacityChart(page.chart)}
<h2>Steps</h2>
<table>
<thead>${head}</thead>
<tbody>
${body}
</tbody>
</table>
</body>
</html>
`;
}
