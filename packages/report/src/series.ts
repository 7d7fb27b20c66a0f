/**
 * A run's time series (the CLI's `series`: one entry per interval, default
 * 1 s) drawn over time: throughput on a linear axis, latency percentiles on a
 * log axis (a one-second stall next to 100 us replies), one line per series,
 * a dot per interval. Inline SVG like the other charts (svg.ts).
 */
import type { IntervalLatencyUs, SeriesPoint } from './rows.js';
import { escapeXml, logTicks, niceCeil, shortNumber, usLabel } from './svg.js';

/** One line of an over-time chart: a point per interval. */
export interface ChartLine {
  name: string;
  color: string;
  /** t: seconds into the measured phase (the interval's middle); v: ops/s or us. */
  points: { t: number; v: number }[];
  dashed?: boolean;
  /** Drawn thinner and lighter (one round among many). */
  faint?: boolean;
  /** data-* attributes of the line's group, for whoever reads the SVG. */
  data?: Record<string, string>;
}

export interface OverTimeOptions {
  kind: 'throughput' | 'latency';
  lines: ChartLine[];
  /** The legend's entries (default: one per line). */
  legend?: { text: string; color: string; dashed?: boolean }[];
  xLabel: string;
  yLabel: string;
  ariaLabel: string;
  noData: string;
  /** Where the time axis ends, seconds (the last interval's end); default: from the points. */
  xEnd?: number;
}

/** Colours for lines: scenarios, commands. */
export const LINE_COLORS = ['#3b6fb6', '#e08a2c', '#4a9a5b', '#9a4a8c', '#c0392b', '#2c9aa0', '#8c6d31', '#7a7a7a', '#d65f9e', '#5b5bd6'];

export function lineColor(i: number): string {
  return LINE_COLORS[i % LINE_COLORS.length];
}

/** The interval's middle, seconds into the measured phase: where its point goes. */
export function pointTime(p: SeriesPoint): number {
  return p.startSec + p.durationSec / 2;
}

/** A line of the series' throughput, one point per interval. */
export function throughputPoints(series: SeriesPoint[], pick: (p: SeriesPoint) => number = (p) => p.opsPerSec): { t: number; v: number }[] {
  return series.map((p) => ({ t: pointTime(p), v: pick(p) }));
}

/** A line of one latency figure, one point per interval (0: the interval had no replies). */
export function latencyPoints(series: SeriesPoint[], key: keyof IntervalLatencyUs): { t: number; v: number }[] {
  return series.map((p) => ({ t: pointTime(p), v: p.latencyUs[key] }));
}

const WIDTH = 900;
const HEIGHT = 300;
const LEFT = 70;
const RIGHT = 20;
const TOP = 34;
const BOTTOM = 44;

/** Seconds on the x axis, ticks at round steps (a last interval a few ms long does not add a step). */
function timeTicks(end: number): { step: number; end: number } {
  const step = niceCeil(Math.max(end, 1) / 8);
  return { step, end: Math.max(step, Math.ceil((end * 0.98) / step) * step) };
}

/** The end of a series' last interval, seconds into the measured phase. */
export function seriesEnd(series: SeriesPoint[]): number {
  return Math.max(0, ...series.map((p) => p.startSec + p.durationSec));
}

/**
 * Throughput or latency against time, a line per series and a `circle.point`
 * per interval (data-t, data-v carry the figures). Latency uses a log axis;
 * an interval with no replies sits on the bottom edge (class `none`).
 */
export function overTimeChart(o: OverTimeOptions): string {
  const plotW = WIDTH - LEFT - RIGHT;
  const plotH = HEIGHT - TOP - BOTTOM;
  const all = o.lines.flatMap((l) => l.points);
  const lastT = Math.max(0, ...o.lines.flatMap((l) => l.points.map((p) => p.t)));
  // The axis ends at the end of the last interval: its middle plus as much again as the first one's.
  const firstHalf = Math.min(...o.lines.map((l) => l.points[0]?.t ?? Infinity));
  const xs = timeTicks(o.xEnd ?? lastT + (Number.isFinite(firstHalf) ? firstHalf : 0));
  const x = (t: number) => LEFT + (Math.min(t, xs.end) / xs.end) * plotW;
  const parts: string[] = [];
  let y: (v: number) => number;
  if (o.kind === 'throughput') {
    const top = Math.max(1, ...all.map((p) => p.v));
    const step = niceCeil(top / 5);
    const yMax = step * Math.max(1, Math.ceil(top / step));
    y = (v) => TOP + plotH - (Math.max(0, v) / yMax) * plotH;
    for (let v = 0; v <= yMax + 1e-9; v += step) {
      parts.push(`<line x1="${LEFT}" y1="${y(v).toFixed(1)}" x2="${LEFT + plotW}" y2="${y(v).toFixed(1)}" class="grid"/>`);
      parts.push(`<text x="${LEFT - 6}" y="${(y(v) + 4).toFixed(1)}" class="tick" text-anchor="end">${shortNumber(v)}</text>`);
    }
  } else {
    const vals = all.map((p) => p.v).filter((v) => v > 0);
    const lo = 10 ** Math.floor(Math.log10(Math.max(vals.length ? Math.min(...vals) : 1, 0.001)));
    const hi = niceCeil(Math.max(vals.length ? Math.max(...vals) : 10, lo * 10));
    y = (v) => TOP + plotH - ((Math.log10(Math.max(v, lo)) - Math.log10(lo)) / (Math.log10(hi) - Math.log10(lo))) * plotH;
    for (const v of logTicks(lo, hi)) {
      parts.push(`<line x1="${LEFT}" y1="${y(v).toFixed(1)}" x2="${LEFT + plotW}" y2="${y(v).toFixed(1)}" class="grid"/>`);
      parts.push(`<text x="${LEFT - 6}" y="${(y(v) + 4).toFixed(1)}" class="tick" text-anchor="end">${usLabel(v)}</text>`);
    }
  }
  for (let t = 0; t <= xs.end + 1e-9; t += xs.step) {
    parts.push(`<line x1="${x(t).toFixed(1)}" y1="${TOP}" x2="${x(t).toFixed(1)}" y2="${TOP + plotH}" class="grid"/>`);
    parts.push(`<text x="${x(t).toFixed(1)}" y="${TOP + plotH + 16}" class="tick" text-anchor="middle">${shortNumber(t)}</text>`);
  }
  parts.push(`<text x="${LEFT + plotW / 2}" y="${HEIGHT - 6}" class="axis x-axis" text-anchor="middle">${escapeXml(o.xLabel)}</text>`);
  parts.push(`<text x="14" y="${TOP + plotH / 2}" class="axis y-axis" text-anchor="middle" transform="rotate(-90 14 ${TOP + plotH / 2})">${escapeXml(o.yLabel)}</text>`);
  // Legend.
  let lx = LEFT;
  for (const it of o.legend ?? o.lines.map((l) => ({ text: l.name, color: l.color, dashed: l.dashed }))) {
    parts.push(`<line x1="${lx}" y1="14" x2="${lx + 18}" y2="14" stroke="${it.color}" stroke-width="2.5"${it.dashed ? ' stroke-dasharray="4 3"' : ''}/>`);
    parts.push(`<text x="${lx + 23}" y="18" class="legend">${escapeXml(it.text)}</text>`);
    lx += 36 + it.text.length * 6.5;
  }
  for (const l of o.lines) {
    const data = Object.entries(l.data ?? {})
      .map(([k, v]) => ` data-${k}="${escapeXml(v)}"`)
      .join('');
    parts.push(`<g class="series" data-name="${escapeXml(l.name)}"${data}><title>${escapeXml(l.name)}</title>`);
    const coords = l.points.map((p) => `${x(p.t).toFixed(1)},${y(p.v).toFixed(1)}`);
    const width = l.faint ? 1.2 : 2;
    const opacity = l.faint ? 0.55 : 0.9;
    if (coords.length > 1) {
      parts.push(`<polyline points="${coords.join(' ')}" fill="none" stroke="${l.color}" stroke-width="${width}" stroke-opacity="${opacity}"${l.dashed ? ' stroke-dasharray="5 4"' : ''}/>`);
    }
    for (const p of l.points) {
      const none = o.kind === 'latency' && !(p.v > 0);
      parts.push(
        `<circle class="point${none ? ' none' : ''}" data-t="${p.t.toFixed(3)}" data-v="${Number(p.v.toFixed(3))}" cx="${x(p.t).toFixed(1)}" cy="${y(p.v).toFixed(1)}" r="${l.faint ? 1.8 : 2.6}" fill="${none ? '#fff' : l.color}" stroke="${l.color}"/>`,
      );
    }
    parts.push('</g>');
  }
  if (all.length === 0) parts.push(`<text x="${LEFT + 8}" y="${TOP + 20}" class="nodata">${escapeXml(o.noData)}</text>`);
  return `<svg class="chart overtime ${o.kind}" xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${HEIGHT}" viewBox="0 0 ${WIDTH} ${HEIGHT}" role="img" aria-label="${escapeXml(o.ariaLabel)}">${parts.join('')}</svg>`;
}
