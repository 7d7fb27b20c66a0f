/**
 * Markdown in the layout users paste today: a heading with the rounds, the
 * parameters and the CSV files, then one table per group:
 *
 *   | scenario | mode | Round1 | Round2 | Round3 | mean QPS | mean avg(us/op) | mean elapsed(s) |
 *
 * Rounds are integer ops/s; the means have two decimals. With a baseline a
 * last column gives each scenario's mean ops/s as a percentage of it.
 */
import type { SummaryRow } from './aggregate.js';
import { labelsFor, localDateTime, type Labels } from './labels.js';
import type { Lang, StudyInfo } from './rows.js';

export interface TableOptions {
  lang?: Lang;
  baseline?: string;
}

/** Two decimals, as the original tool's tables; `-` when there is nothing to show. */
export function fixed2(v: number | null): string {
  return v === null || !Number.isFinite(v) ? '-' : v.toFixed(2);
}

export function percent(ratio: number | null): string {
  return ratio === null || !Number.isFinite(ratio) ? '-' : `${(ratio * 100).toFixed(1)}%`;
}

/** A Markdown cell: pipes escaped, line breaks flattened. */
function cell(text: string): string {
  return text.replace(/\|/g, '\\|').replace(/\r?\n/g, ' ');
}

export function roundCellText(c: SummaryRow['rounds'][number], t: Labels): string {
  if (c.opsPerSec !== null) return String(Math.round(c.opsPerSec));
  if (c.status === 'missing') return t.notRun;
  return t.failed;
}

/** Header cells and the row cells of one table (shared by Markdown and HTML). */
export function tableCells(summaries: SummaryRow[], options: TableOptions = {}): { header: string[]; rows: string[][] } {
  const t = labelsFor(options.lang);
  const rounds = Math.max(0, ...summaries.map((s) => s.rounds.length));
  const header = [t.scenario, t.mode];
  for (let i = 1; i <= rounds; i++) header.push(t.round(i));
  header.push(t.meanQps, t.meanAvgUs, t.meanElapsed);
  if (options.baseline) header.push(t.vsBaseline(options.baseline));
  const rows = summaries.map((s) => {
    const r = [s.label, s.mode];
    for (let i = 0; i < rounds; i++) r.push(s.rounds[i] ? roundCellText(s.rounds[i], t) : t.notRun);
    r.push(fixed2(s.opsPerSec.mean), fixed2(s.avgUsPerOp.mean), fixed2(s.elapsedSec.mean));
    if (options.baseline) r.push(percent(s.ratioToBaseline));
    return r;
  });
  return { header, rows };
}

/** One Markdown table (no heading). Number columns are right-aligned. */
export function markdownTable(summaries: SummaryRow[], options: TableOptions = {}): string {
  const { header, rows } = tableCells(summaries, options);
  const align = header.map((_, i) => (i < 2 ? '---' : '---:'));
  const line = (cells: string[]) => `| ${cells.map(cell).join(' | ')} |`;
  return [line(header), `|${align.join('|')}|`, ...rows.map(line)].join('\n');
}

/** Summaries split by group, in the study's group order (then any group only the rows know). */
export function byGroup(summaries: SummaryRow[], study: Pick<StudyInfo, 'groups'>): { title: string; summaries: SummaryRow[] }[] {
  const titles = [...study.groups.map((g) => g.title)];
  for (const s of summaries) if (!titles.includes(s.group)) titles.push(s.group);
  return titles.map((title) => ({ title, summaries: summaries.filter((s) => s.group === title) })).filter((g) => g.summaries.length > 0);
}

/** The preamble lines: rounds, parameters, files, engine, and whether the study is partial. */
export function preambleLines(study: StudyInfo, t: Labels): string[] {
  const lines = [t.roundsLine(study.rounds)];
  if (study.parameters) lines.push(`${t.parameters}: ${study.parameters}`);
  if (study.files?.detail) lines.push(`${t.detail}: ${study.files.detail}`);
  if (study.files?.summary) lines.push(`${t.summary}: ${study.files.summary}`);
  if (study.engines && study.engines.length > 0) lines.push(`${t.engine}: ${study.engines.join(', ')}`);
  if (study.runsPlanned !== undefined && study.runsDone !== undefined && study.runsDone < study.runsPlanned) {
    lines.push(t.partial(study.runsDone, study.runsPlanned));
  }
  if (study.stopped) lines.push(`${t.stopped}: ${study.stopped}`);
  return lines;
}

/** The whole Markdown document: heading, preamble, one table per group. */
export function markdownReport(summaries: SummaryRow[], study: StudyInfo, lang: Lang = 'en'): string {
  const t = labelsFor(lang);
  const zhColon = lang === 'zh';
  const out: string[] = [];
  out.push(`## ${t.heading(study.name, study.rounds, localDateTime(study.startedAt))}`, '');
  for (const l of preambleLines(study, t)) out.push(zhColon ? `- ${l.replace(/^([^:：]+): /, '$1：')}` : `- ${l}`);
  for (const g of byGroup(summaries, study)) {
    out.push('', `### ${g.title}`, '', markdownTable(g.summaries, { lang, baseline: study.baseline }));
  }
  return `${out.join('\n')}\n`;
}
