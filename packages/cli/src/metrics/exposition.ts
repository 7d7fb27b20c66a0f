/**
 * The text a scrape gets: the Prometheus text format 0.0.4, or OpenMetrics
 * 1.0 when the scraper asks for it (Prometheus does, in its Accept header).
 * The two differ in the TYPE line of counters (OpenMetrics names the family
 * without `_total`), the UNIT lines and the closing `# EOF`.
 */
import { DURATION_BUCKETS_SECONDS, type Family } from './families.js';
import type { HistogramSeries, Labels, LiveMetrics, Series } from './registry.js';

export type Format = 'prometheus' | 'openmetrics';

export const CONTENT_TYPE: Record<Format, string> = {
  prometheus: 'text/plain; version=0.0.4; charset=utf-8',
  openmetrics: 'application/openmetrics-text; version=1.0.0; charset=utf-8',
};

/** The format an Accept header asks for: OpenMetrics when it is named, else the Prometheus text format. */
export function formatFor(accept: string | undefined): Format {
  return accept && /application\/openmetrics-text/i.test(accept) ? 'openmetrics' : 'prometheus';
}

function escapeLabel(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
}

function escapeHelp(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
}

function labelText(labels: Labels, extra?: [string, string]): string {
  const pairs = Object.entries(labels).map(([k, v]) => `${k}="${escapeLabel(v)}"`);
  if (extra) pairs.push(`${extra[0]}="${escapeLabel(extra[1])}"`);
  return pairs.length ? `{${pairs.join(',')}}` : '';
}

/** A number as both formats write it (integers without a fraction, +Inf spelt out). */
function num(v: number): string {
  if (v === Infinity) return '+Inf';
  if (Number.isInteger(v)) return String(v);
  return String(Number(v.toPrecision(12)));
}

export function render(metrics: LiveMetrics, format: Format): string {
  const lines: string[] = [];
  for (const { family, series } of metrics.snapshot()) {
    const familyName = format === 'openmetrics' && family.type === 'counter' ? family.name.replace(/_total$/, '') : family.name;
    lines.push(`# HELP ${familyName} ${escapeHelp(family.help)}`);
    lines.push(`# TYPE ${familyName} ${family.type}`);
    if (format === 'openmetrics' && family.unit) lines.push(`# UNIT ${familyName} ${family.unit}`);
    if (family.type === 'histogram') for (const h of series as HistogramSeries[]) histogramLines(lines, family, h);
    else for (const s of series as Series[]) lines.push(`${family.name}${labelText(s.labels)} ${num(s.value)}`);
  }
  if (format === 'openmetrics') lines.push('# EOF');
  return `${lines.join('\n')}\n`;
}

function histogramLines(lines: string[], family: Family, h: HistogramSeries): void {
  let cumulative = 0;
  const bounds = [...DURATION_BUCKETS_SECONDS, Infinity];
  bounds.forEach((le, k) => {
    cumulative += h.counts[k];
    lines.push(`${family.name}_bucket${labelText(h.labels, ['le', num(le)])} ${cumulative}`);
  });
  lines.push(`${family.name}_sum${labelText(h.labels)} ${num(h.sumSeconds)}`);
  lines.push(`${family.name}_count${labelText(h.labels)} ${cumulative}`);
}
