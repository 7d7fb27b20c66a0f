/**
 * A capacity search drawn and written up: latency percentiles against the
 * achieved throughput of each step (the load curve), the SLO's bounds as
 * horizontal lines and the capacity found as a vertical one, as inline SVG;
 * and a self-contained HTML page around it (`respbench capacity --html`).
 */
import { htmlPage, htmlTable, metaList } from './page.js';
import { escapeXml, logTicks, niceCeil, shortNumber, usLabel } from './svg.js';

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
  const cls = (i: number, j: number) => [page.table.numeric[j] ? 'num' : '', page.table.bad(i, j) ? 'bad' : ''].filter((x) => x !== '').join(' ');
  const body = `${metaList(page.meta)}
<p class="answer">${escapeXml(page.answer)}</p>
${page.notes.map((n) => `<p>${escapeXml(n)}</p>`).join('\n')}
<h2>Latency against throughput</h2>
${capacityChart(page.chart)}
<h2>Steps</h2>
${htmlTable(page.table.header, page.table.rows, cls)}`;
  return htmlPage({ title: page.title, body });
}
