/**
 * The study page's two charts, drawn as inline SVG strings so the page
 * needs no script, no network and no library to show them:
 *
 * - throughput: per scenario one bar per mode (mean ops/s), a whisker from the
 *   slowest to the fastest round, a dot per round, and the mean as a number
 *   in a column right of the plot;
 * - latency: per scenario × mode the p50, p90, p99 and p99.9 of all ok rounds'
 *   requests together on a log axis;
 *
 * and the axis helpers every chart shares (the capacity chart, the
 * over-time charts of series.ts): round ticks, log ticks, short labels.
 */
import type { SummaryRow } from './aggregate.js';
import type { Labels } from './labels.js';

export function escapeXml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;');
}

const MODE_COLORS = ['#3b6fb6', '#e08a2c', '#4a9a5b', '#9a4a8c', '#7a7a7a'];
const PERCENTILE_COLORS = { p50: '#3b6fb6', p90: '#4a9a5b', p99: '#e08a2c', p999: '#c0392b' } as const;

export function modeColor(mode: string, modes: string[]): string {
  const i = modes.indexOf(mode);
  return MODE_COLORS[(i < 0 ? modes.length : i) % MODE_COLORS.length];
}

/** 1, 2, 5 × 10^k at or above v. */
export function niceCeil(v: number): number {
  if (!(v > 0)) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}

/** 12.3k, 1.25M: short tick labels. */
export function shortNumber(v: number): string {
  const a = Math.abs(v);
  const trim = (s: string) => s.replace(/\.0+$/, '').replace(/(\.\d*?)0+$/, '$1');
  if (a >= 1e6) return `${trim((v / 1e6).toFixed(2))}M`;
  if (a >= 1e3) return `${trim((v / 1e3).toFixed(1))}k`;
  if (a >= 10 || a === 0) return String(Math.round(v));
  return trim(v.toFixed(2));
}

function grouped(n: number): string {
  return Math.round(n).toLocaleString('en-US');
}

const WIDTH = 900;
const LABEL_W = 300;
const RIGHT_PAD = 90;
const BAR_H = 16;
const BAR_GAP = 4;
const BAND_PAD = 12;
const TOP = 34;
const AXIS_H = 34;

interface Band {
  label: string;
  rows: SummaryRow[];
}

function bands(summaries: SummaryRow[]): Band[] {
  const out: Band[] = [];
  for (const s of summaries) {
    const last = out[out.length - 1];
    if (last && last.rows[0].scenario === s.scenario) last.rows.push(s);
    else out.push({ label: s.label, rows: [s] });
  }
  return out;
}

function legend(items: { text: string; color: string; shape?: 'rect' | 'circle' }[], y: number): string {
  let x = LABEL_W;
  return items
    .map((it) => {
      const mark =
        it.shape === 'circle'
          ? `<circle cx="${x + 6}" cy="${y - 4}" r="5" fill="${it.color}"/>`
          : `<rect x="${x}" y="${y - 10}" width="12" height="12" fill="${it.color}"/>`;
      const s = `${mark}<text x="${x + 17}" y="${y}" class="legend">${escapeXml(it.text)}</text>`;
      x += 30 + it.text.length * 7;
      return s;
    })
    .join('');
}

/**
 * Horizontal bars of mean ops/s, one band per scenario and one bar per mode,
 * with the spread over rounds. `scaleMax` lets several charts share an axis.
 */
export function throughputChart(summaries: SummaryRow[], modes: string[], t: Labels, scaleMax?: number): string {
  const bs = bands(summaries);
  const plotW = WIDTH - LABEL_W - RIGHT_PAD;
  const highest = Math.max(0, ...summaries.map((s) => s.opsPerSec.max ?? 0));
  // A round tick step (1, 2, 2.5, 5 × 10^k) giving about five ticks, and the
  // axis ending at the first tick past the fastest round.
  const top = Math.max(scaleMax ?? highest, 1);
  const step = niceCeil(top / 5);
  const ticks = Math.max(1, Math.ceil(top / step));
  const xMax = step * ticks;
  const x = (v: number) => LABEL_W + (v / xMax) * plotW;
  const bandH = (b: Band) => b.rows.length * (BAR_H + BAR_GAP) - BAR_GAP + 2 * BAND_PAD;
  const plotH = bs.reduce((a, b) => a + bandH(b), 0);
  const height = TOP + plotH + AXIS_H;
  const parts: string[] = [];
  const usedModes = modes.filter((m) => summaries.some((s) => s.mode === m));
  for (const s of summaries) if (!usedModes.includes(s.mode)) usedModes.push(s.mode);
  parts.push(legend(usedModes.map((m) => ({ text: m, color: modeColor(m, modes) })), 18));
  for (let i = 0; i <= ticks; i++) {
    const v = (xMax * i) / ticks;
    const tx = x(v);
    parts.push(`<line x1="${tx}" y1="${TOP}" x2="${tx}" y2="${TOP + plotH}" class="grid"/>`);
    parts.push(`<text x="${tx}" y="${TOP + plotH + 16}" class="tick" text-anchor="middle">${shortNumber(v)}</text>`);
  }
  parts.push(`<text x="${LABEL_W + plotW / 2}" y="${height - 4}" class="axis" text-anchor="middle">${escapeXml(t.opsPerSec)}</text>`);
  const valueX = LABEL_W + plotW + 10;
  parts.push(`<text x="${valueX}" y="${TOP - 4}" class="axis">${escapeXml(t.meanQps)}</text>`);
  let y = TOP;
  for (const b of bs) {
    const h = bandH(b);
    parts.push(`<text x="${LABEL_W - 10}" y="${y + h / 2 + 4}" class="label" text-anchor="end">${escapeXml(b.label)}</text>`);
    let by = y + BAND_PAD;
    for (const s of b.rows) {
      const color = modeColor(s.mode, modes);
      const cy = by + BAR_H / 2;
      const o = s.opsPerSec;
      const title = `${s.label} · ${s.mode}: ` + (o.mean === null ? t.noData : `mean ${grouped(o.mean)} ops/s, sd ${grouped(o.stddev ?? 0)}, min ${grouped(o.min!)}, max ${grouped(o.max!)}, rounds ${o.n}`);
      parts.push(`<g class="bar" data-scenario="${escapeXml(s.scenario)}" data-mode="${escapeXml(s.mode)}"><title>${escapeXml(title)}</title>`);
      if (o.mean === null) {
        parts.push(`<text x="${LABEL_W + 4}" y="${cy + 4}" class="nodata">${escapeXml(`${s.mode}: ${t.noData}`)}</text>`);
      } else {
        parts.push(`<rect x="${LABEL_W}" y="${by}" width="${Math.max(1, x(o.mean) - LABEL_W).toFixed(1)}" height="${BAR_H}" fill="${color}" fill-opacity="0.8"/>`);
        if (o.n > 1) {
          const x1 = x(o.min!).toFixed(1);
          const x2 = x(o.max!).toFixed(1);
          parts.push(`<line x1="${x1}" y1="${cy}" x2="${x2}" y2="${cy}" class="whisker"/>`);
          parts.push(`<line x1="${x1}" y1="${cy - 5}" x2="${x1}" y2="${cy + 5}" class="whisker"/>`);
          parts.push(`<line x1="${x2}" y1="${cy - 5}" x2="${x2}" y2="${cy + 5}" class="whisker"/>`);
        }
        for (const r of s.rounds) {
          if (r.opsPerSec !== null) parts.push(`<circle cx="${x(r.opsPerSec).toFixed(1)}" cy="${cy}" r="2.6" class="round"/>`);
        }
        // The mean in a column of its own right of the plot: next to the max whisker it read as the max.
        parts.push(`<text x="${valueX}" y="${cy + 4}" class="value mean">${grouped(o.mean)}</text>`);
      }
      parts.push('</g>');
      by += BAR_H + BAR_GAP;
    }
    y += h;
  }
  return `<svg class="chart throughput" xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" role="img" aria-label="${escapeXml(t.throughputChart)}">${parts.join('')}</svg>`;
}

/** Log-scale ticks: 1, 2, 5 × 10^k within [lo, hi]. */
export function logTicks(lo: number, hi: number): number[] {
  const out: number[] = [];
  for (let k = Math.floor(Math.log10(lo)); k <= Math.ceil(Math.log10(hi)); k++) {
    for (const m of [1, 2, 5]) {
      const v = m * 10 ** k;
      if (v >= lo && v <= hi) out.push(v);
    }
  }
  return out;
}

/** A latency tick label: 500 us, 2 ms, 1 s. */
export function usLabel(us: number): string {
  if (us >= 1e6) return `${shortNumber(us / 1e6)} s`;
  if (us >= 1000) return `${shortNumber(us / 1000)} ms`;
  return `${shortNumber(us)} us`;
}

const PERCENTILES = [
  ['p50', 'p50'],
  ['p90', 'p90'],
  ['p99', 'p99'],
  ['p999', 'p99.9'],
] as const;

/** Per scenario × mode, the p50/p90/p99/p99.9 latency of the merged rounds on a log axis. */
export function latencyChart(summaries: SummaryRow[], t: Labels, range?: { lo: number; hi: number }): string {
  const rows = summaries.filter((s) => s.latencyUs !== null);
  const values = rows.flatMap((s) => PERCENTILES.map(([k]) => s.latencyUs![k])).filter((v) => v > 0);
  const lo0 = range?.lo ?? (values.length ? Math.min(...values) : 1);
  const hi0 = range?.hi ?? (values.length ? Math.max(...values) : 10);
  const lo = 10 ** Math.floor(Math.log10(Math.max(lo0, 0.001)));
  const hi = niceCeil(Math.max(hi0, lo * 10));
  const plotW = WIDTH - LABEL_W - RIGHT_PAD;
  const x = (v: number) => LABEL_W + ((Math.log10(Math.max(v, lo)) - Math.log10(lo)) / (Math.log10(hi) - Math.log10(lo))) * plotW;
  const rowH = 22;
  const plotH = Math.max(rowH, rows.length * rowH) + 8;
  const height = TOP + plotH + AXIS_H;
  const parts: string[] = [];
  parts.push(legend(PERCENTILES.map(([k, name]) => ({ text: name, color: PERCENTILE_COLORS[k], shape: 'circle' as const })), 18));
  for (const v of logTicks(lo, hi)) {
    const tx = x(v).toFixed(1);
    parts.push(`<line x1="${tx}" y1="${TOP}" x2="${tx}" y2="${TOP + plotH}" class="grid"/>`);
    parts.push(`<text x="${tx}" y="${TOP + plotH + 16}" class="tick" text-anchor="middle">${shortNumber(v)}</text>`);
  }
  parts.push(`<text x="${LABEL_W + plotW / 2}" y="${height - 4}" class="axis" text-anchor="middle">${escapeXml(t.latencyAxis)}</text>`);
  rows.forEach((s, i) => {
    const cy = TOP + 4 + i * rowH + rowH / 2;
    const l = s.latencyUs!;
    const title = `${s.label} · ${s.mode}: ` + PERCENTILES.map(([k, name]) => `${name} ${l[k].toFixed(1)} us`).join(', ');
    parts.push(`<g class="latency" data-scenario="${escapeXml(s.scenario)}" data-mode="${escapeXml(s.mode)}"><title>${escapeXml(title)}</title>`);
    parts.push(`<text x="${LABEL_W - 10}" y="${cy + 4}" class="label" text-anchor="end">${escapeXml(`${s.label} · ${s.mode}`)}</text>`);
    parts.push(`<line x1="${x(l.p50).toFixed(1)}" y1="${cy}" x2="${x(l.p999).toFixed(1)}" y2="${cy}" class="span"/>`);
    for (const [k] of PERCENTILES) parts.push(`<circle cx="${x(l[k]).toFixed(1)}" cy="${cy}" r="4.5" fill="${PERCENTILE_COLORS[k]}"/>`);
    parts.push('</g>');
  });
  if (rows.length === 0) parts.push(`<text x="${LABEL_W + 4}" y="${TOP + 16}" class="nodata">${escapeXml(t.noData)}</text>`);
  return `<svg class="chart latency" xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" role="img" aria-label="${escapeXml(t.latencyChart)}">${parts.join('')}</svg>`;
}
