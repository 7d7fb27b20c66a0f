/**
 * Markdown in the layout users paste today: a heading with the rounds, the
 * parameters and the CSV files, then per group the commands and whether
 * reads were verified, and one table:
 *
 *   | scenario | mode | Round1 | Round2 | Round3 | mean QPS | sd QPS | CV | mean avg(us/op) | mean elapsed(s) |
 *
 * Rounds are integer ops/s; the means and the standard deviation (the spread
 * of the rounds, beside the mean) have two decimals; CV is sd / mean as a
 * percentage (how much the rounds disagree; the preamble warns above the
 * study's cvWarn). With a baseline a last
 * column gives each scenario's mean ops/s as a percentage of it. Rows whose
 * rounds were too short to mean much are named under the table.
 */
import { DEFAULT_CV_WARN, unsteadyRows, type SummaryRow } from './aggregate.js';
import { DEFAULT_TABLE_PERCENTILES, latencyAt, percentileLabel } from './percentiles.js';
import { labelsFor, localDateTime, type Labels } from './labels.js';
import type { Lang, StudyInfo } from './rows.js';

export interface TableOptions {
  lang?: Lang;
  baseline?: string;
  /** Add the merged p50, p99 and p99.9 latency (the HTML table). */
  latency?: boolean;
  /** The study's chosen percentiles (StudyInfo.percentiles): the latency columns, in the Markdown table too. */
  percentiles?: readonly number[];
  /**
   * A capacity study's SLO (`p99 ≤ 1 ms`): the rounds are capacities, and
   * the columns their mean, spread, min and max (no latency, avg us/op or
   * elapsed: a search has none of its own).
   */
  capacity?: string;
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

/** The table's latency percentiles: the chosen ones, else p50/p99/p99.9 with `latency`, else none. */
function tablePercentiles(options: TableOptions): readonly number[] {
  if (options.percentiles && options.percentiles.length > 0) return options.percentiles;
  return options.latency ? DEFAULT_TABLE_PERCENTILES : [];
}

/** Header cells and the row cells of one table (shared by Markdown and HTML). */
export function tableCells(summaries: SummaryRow[], options: TableOptions = {}): { header: string[]; rows: string[][] } {
  const t = labelsFor(options.lang);
  const rounds = Math.max(0, ...summaries.map((s) => s.rounds.length));
  const header = [t.scenario, t.mode];
  for (let i = 1; i <= rounds; i++) header.push(t.round(i));
  if (options.capacity !== undefined) return capacityCells(summaries, options.capacity, rounds, header, options);
  header.push(t.meanQps, t.sdQps, t.cv, t.meanAvgUs, t.meanElapsed);
  const ps = tablePercentiles(options);
  header.push(...ps.map((p) => t.latencyHeader(percentileLabel(p))));
  if (options.baseline) header.push(t.vsBaseline(options.baseline));
  const rows = summaries.map((s) => {
    const r = [s.label, s.mode];
    for (let i = 0; i < rounds; i++) r.push(s.rounds[i] ? roundCellText(s.rounds[i], t) : t.notRun);
    // One round has no spread to show.
    r.push(fixed2(s.opsPerSec.mean), s.opsPerSec.n > 1 ? fixed2(s.opsPerSec.stddev) : '-', percent(s.cvOpsPerSec), fixed2(s.avgUsPerOp.mean), fixed2(s.elapsedSec.mean));
    r.push(...ps.map((p) => (s.latencyUs ? fixed2(latencyAt(s.latencyUs, s.percentilesUs, p)) : '-')));
    if (options.baseline) r.push(percent(s.ratioToBaseline));
    return r;
  });
  return { header, rows };
}

/** tableCells of a capacity study: rounds, then the capacities' mean, spread, min, max and the ratio. */
function capacityCells(summaries: SummaryRow[], slo: string, rounds: number, header: string[], options: TableOptions): { header: string[]; rows: string[][] } {
  const t = labelsFor(options.lang);
  header.push(t.meanCapacity(slo), t.sdCapacity, t.minCapacity, t.maxCapacity);
  if (options.baseline) header.push(t.vsBaseline(options.baseline));
  const whole = (v: number | null) => (v === null ? '-' : String(Math.round(v)));
  const rows = summaries.map((s) => {
    const r = [s.label, s.mode];
    for (let i = 0; i < rounds; i++) r.push(s.rounds[i] ? roundCellText(s.rounds[i], t) : t.notRun);
    const o = s.opsPerSec;
    r.push(fixed2(o.mean), o.n > 1 ? fixed2(o.stddev) : '-', whole(o.min), whole(o.max));
    if (options.baseline) r.push(percent(s.ratioToBaseline));
    return r;
  });
  return { header, rows };
}

/**
 * A capacity study's sentence per mode: `set: kvstore reaches 4950 ops/s at
 * p99 ≤ 1 ms, redis (aof_always) 3100`, each the mean of its ok rounds
 * (± the spread when there are several), in the table's order.
 */
export function capacityLines(summaries: SummaryRow[], slo: string, t: Labels, baseline?: string): string[] {
  const modes = [...new Set(summaries.map((s) => s.mode))];
  const figure = (s: SummaryRow) => {
    const o = s.opsPerSec;
    if (o.mean === null) return t.failed;
    return `${Math.round(o.mean)}${o.n > 1 && o.stddev !== null ? ` ± ${Math.round(o.stddev)}` : ''}`;
  };
  const share = (s: SummaryRow) =>
    baseline !== undefined && s.scenario !== baseline && s.ratioToBaseline !== null ? ` (${t.shareOf(percent(s.ratioToBaseline), baseline)})` : '';
  return modes.map((mode) => {
    const mine = summaries.filter((s) => s.mode === mode);
    const [first, ...rest] = mine;
    return t.reaches(mode, first.label, figure(first), slo, share(first), rest.map((s) => `${s.label} ${figure(s)}${share(s)}`));
  });
}

/**
 * A command mix's figures per command (the rows' perCommand), shared by
 * Markdown and HTML: scenario, mode, command, requests over the ok rounds,
 * mean ops/s, the latency percentiles (chosen, else p50/p99/p99.9) and max.
 * Null when no row has a mix.
 */
export function commandTableCells(summaries: SummaryRow[], options: Pick<TableOptions, 'lang' | 'percentiles'> = {}): { header: string[]; rows: string[][] } | null {
  const mixed = summaries.filter((s) => (s.perCommand?.length ?? 0) > 0);
  if (mixed.length === 0) return null;
  const t = labelsFor(options.lang);
  const ps = tablePercentiles({ ...options, latency: true });
  const header = [t.scenario, t.mode, t.command, t.requests, t.meanQps, ...ps.map((p) => t.latencyHeader(percentileLabel(p))), t.latencyHeader('max')];
  const rows: string[][] = [];
  for (const s of mixed) {
    const line = (command: string, requests: number | undefined, mean: number | null, l: SummaryRow['latencyUs'], chosen: Record<string, number> | null | undefined) => [
      s.label,
      s.mode,
      command,
      requests === undefined ? '-' : String(requests),
      fixed2(mean),
      ...ps.map((p) => (l ? fixed2(latencyAt(l, chosen, p)) : '-')),
      l ? fixed2(l.max) : '-',
    ];
    for (const c of s.perCommand!) rows.push(line(c.command, c.requests, c.opsPerSec.mean, c.latencyUs, c.percentilesUs));
    rows.push(line(t.totals, s.requests, s.opsPerSec.mean, s.latencyUs, s.percentilesUs));
  }
  return { header, rows };
}

function markdownGrid(header: string[], rows: string[][], textColumns: number): string {
  const align = header.map((_, i) => (i < textColumns ? '---' : '---:'));
  const line = (cells: string[]) => `| ${cells.map(cell).join(' | ')} |`;
  return [line(header), `|${align.join('|')}|`, ...rows.map(line)].join('\n');
}

/** One Markdown table (no heading). Number columns are right-aligned. */
export function markdownTable(summaries: SummaryRow[], options: TableOptions = {}): string {
  const { header, rows } = tableCells(summaries, options);
  return markdownGrid(header, rows, 2);
}

/** The per-command table of a mix (commandTableCells) in Markdown; null when no row has a mix. */
export function markdownCommandTable(summaries: SummaryRow[], options: Pick<TableOptions, 'lang' | 'percentiles'> = {}): string | null {
  const cells = commandTableCells(summaries, options);
  return cells ? markdownGrid(cells.header, cells.rows, 3) : null;
}

/** Summaries split by group, in the study's group order (then any group only the rows know). */
export function byGroup(summaries: SummaryRow[], study: Pick<StudyInfo, 'groups'>): { title: string; summaries: SummaryRow[] }[] {
  const titles = [...study.groups.map((g) => g.title)];
  for (const s of summaries) if (!titles.includes(s.group)) titles.push(s.group);
  return titles.map((title) => ({ title, summaries: summaries.filter((s) => s.group === title) })).filter((g) => g.summaries.length > 0);
}

/**
 * The preamble lines: rounds, parameters, files, engine, whether the study is
 * partial, and a warning when finished runs were too short to mean much.
 */
export function preambleLines(study: StudyInfo, t: Labels, summaries: SummaryRow[] = []): string[] {
  const lines = [t.roundsLine(study.rounds)];
  if (study.parameters) lines.push(`${t.parameters}: ${study.parameters}`);
  if (study.files?.detail) lines.push(`${t.detail}: ${study.files.detail}`);
  if (study.files?.summary) lines.push(`${t.summary}: ${study.files.summary}`);
  if (study.engines && study.engines.length > 0) lines.push(`${t.engine}: ${study.engines.join(', ')}`);
  if (study.only && study.only.length > 0) lines.push(t.only(study.only));
  if (study.runsPlanned !== undefined && study.runsDone !== undefined && study.runsDone < study.runsPlanned) {
    lines.push(t.partial(study.runsDone, study.runsPlanned));
  }
  if (study.stopped) lines.push(`${t.stopped}: ${study.stopped}`);
  const short = summaries.reduce((a, s) => a + s.shortRounds, 0);
  if (short > 0) lines.push(t.shortRuns(short, summaries.reduce((a, s) => a + s.okRounds, 0)));
  const threshold = study.cvWarn ?? DEFAULT_CV_WARN;
  const unsteady = unsteadyRows(summaries, threshold);
  if (unsteady.length > 0) lines.push(t.unsteady(unsteady.map((s) => `${s.label} · ${s.mode} (${percent(s.cvOpsPerSec)})`).join(', '), percent(threshold)));
  return lines;
}

/**
 * `commands: SET/GET · verification (--verify-get): on, every read verified`:
 * what a group's table measured. `colon` is `：` for zh.
 */
export function groupLine(summaries: SummaryRow[], t: Labels, colon = ': '): string {
  const commands = commandsByScenario(summaries);
  const reading = summaries.filter((s) => s.verifyGet && s.mode !== 'set');
  const bad = reading.reduce((a, s) => a + s.mismatchRounds, 0);
  let verification = t.verifyOff;
  if (reading.length > 0) verification = bad > 0 ? t.verifyFailed(bad) : t.verifyClean;
  else if (summaries.some((s) => s.verifyGet)) verification = t.verifyNoReads;
  const parts = [];
  if (commands.length > 0) parts.push(`${t.commands}${colon}${commands.join(', ')}`);
  parts.push(`${t.verification}${colon}${verification}`);
  return parts.join(' · ');
}

/**
 * The group's commands: `SET/GET` when every scenario ran the same, else
 * each scenario's (`kvstore: RSET/RGET; redis: SET/GET`), so a reader of the
 * heading knows which scenario sent what.
 */
function commandsByScenario(summaries: SummaryRow[]): string[] {
  const all = [...new Set(summaries.flatMap((s) => s.commands))];
  const byLabel = new Map<string, string[]>();
  for (const s of summaries) byLabel.set(s.label, [...new Set([...(byLabel.get(s.label) ?? []), ...s.commands])]);
  const same = [...byLabel.values()].every((c) => c.join() === all.join());
  if (same || byLabel.size < 2) return all;
  return [[...byLabel].filter(([, c]) => c.length > 0).map(([label, c]) => `${label}: ${c.join(', ')}`).join('; ')];
}

/**
 * Under a group's table: each round not counted, with why (did not verify:
 * its first mismatch or lost write; failed: its failure), and each round
 * whose connect phase took seconds. Empty when there is nothing to say.
 */
export function roundNoteLines(summaries: SummaryRow[], t: Labels): string[] {
  const lines: string[] = [];
  for (const s of summaries) {
    for (const r of s.notOkRounds ?? []) {
      if (r.status === 'ok') continue;
      lines.push(`${s.label} · ${s.mode} · round ${r.round} ${t.roundNotOk(r.status)}: ${r.reason}`);
    }
    for (const c of s.slowConnects ?? []) lines.push(`${s.label} · ${s.mode} · round ${c.round}: ${t.slowConnect(c.seconds.toFixed(2))}`);
  }
  return lines;
}

/** Under a group's table: the rows whose rounds were too short, or null. */
export function shortRowsLine(summaries: SummaryRow[], t: Labels): string | null {
  const short = summaries.filter((s) => s.shortRounds > 0);
  if (short.length === 0) return null;
  const names = short.map((s) => `${s.label} · ${s.mode} (${s.shortRounds}/${s.okRounds})`);
  return `${t.shortRows}: ${names.join(', ')}; ${short[0].shortReason}`;
}

/** The whole Markdown document: heading, preamble, one table per group. */
export function markdownReport(summaries: SummaryRow[], study: StudyInfo, lang: Lang = 'en'): string {
  const t = labelsFor(lang);
  const zhColon = lang === 'zh';
  const out: string[] = [];
  out.push(`## ${t.heading(study.name, study.rounds, localDateTime(study.startedAt))}`, '');
  const colon = (l: string) => (zhColon ? l.replace(/^([^:：]+): /, '$1：') : l);
  for (const l of preambleLines(study, t, summaries)) out.push(`- ${colon(l)}`);
  const slo = study.capacity?.slo;
  for (const g of byGroup(summaries, study)) {
    out.push('', `### ${g.title}`, '', groupLine(g.summaries, t, zhColon ? '：' : ': '));
    if (slo !== undefined) out.push('', ...capacityLines(g.summaries, slo, t, study.baseline).map((l) => `- ${l}`));
    out.push('', markdownTable(g.summaries, { lang, baseline: study.baseline, capacity: slo, percentiles: study.percentiles }));
    const perCommand = markdownCommandTable(g.summaries, { lang, percentiles: study.percentiles });
    if (perCommand) out.push('', `${t.perCommand}${zhColon ? '：' : ':'}`, '', perCommand);
    const short = shortRowsLine(g.summaries, t);
    if (short) out.push('', `> ${colon(short)}`);
    const notes = roundNoteLines(g.summaries, t);
    if (notes.length > 0) out.push('', ...notes.map((l) => `> ${l.replace(/\n/g, ' ')}  `));
  }
  return `${out.join('\n')}\n`;
}
