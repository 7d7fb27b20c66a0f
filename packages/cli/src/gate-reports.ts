/**
 * The gates' results for CI: `--junit FILE` (JUnit XML, the Ant/Jenkins
 * schema every CI reads: one testcase per command or test, a failure per
 * case that missed a gate, its text the missed lines) and `--markdown FILE`
 * (a table for a GitHub job summary; without --markdown, appended to
 * $GITHUB_STEP_SUMMARY when that is set). Both written whole.
 */
import { appendFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { writeWhole } from './files.js';
import type { GateCase } from './gates.js';

export interface GateReport {
  /** The testsuite's name and the table's heading: what ran (`respbench run`, `respbench compare`). */
  title: string;
  /** testcase classname: `respbench.run`, `respbench.suite`, `respbench.compare`. */
  classname: string;
  /** The gates as given, e.g. `--slo p99<=1ms`. */
  gates: string;
  cases: GateCase[];
  /** The figure columns of the Markdown table and how to show each value. */
  columns: { figure: string; label: string; show: (v: number) => string }[];
  startedUnixMs: number;
}

function xml(text: string): string {
  // Characters XML 1.0 cannot hold at all are dropped; the rest escaped.
  // eslint-disable-next-line no-control-regex
  return text.replace(/[^\x09\x0a\x0d\x20-\ud7ff\ue000-\ufffd]/gu, '').replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

/** The JUnit XML text: a testsuite, a testcase per case, a failure for each that missed. */
export function junitXml(r: GateReport): string {
  const failures = r.cases.filter((c) => c.missed.length > 0).length;
  const seconds = r.cases.reduce((s, c) => s + c.seconds, 0);
  // The schema's timestamp: ISO 8601 without zone or fraction (UTC here).
  const timestamp = new Date(r.startedUnixMs).toISOString().slice(0, 19);
  const lines = [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuite name="${xml(r.title)}" timestamp="${timestamp}" hostname="${xml(hostname() || 'unknown')}" tests="${r.cases.length}" failures="${failures}" errors="0" time="${seconds.toFixed(3)}">`,
    '  <properties>',
    `    <property name="gates" value="${xml(r.gates)}"/>`,
    '  </properties>',
  ];
  for (const c of r.cases) {
    const open = `  <testcase name="${xml(c.name)}" classname="${xml(r.classname)}" time="${c.seconds.toFixed(3)}"`;
    if (c.missed.length === 0) lines.push(`${open}/>`);
    else lines.push(`${open}>`, `    <failure message="${xml(c.missed[0])}" type="gate">${xml(c.missed.join('\n'))}</failure>`, '  </testcase>');
  }
  lines.push('  <system-out/>', '  <system-err/>', '</testsuite>', '');
  return lines.join('\n');
}

function cell(text: string): string {
  return text.replace(/\|/g, '\\|').replace(/\r?\n/g, ' ');
}

/** The Markdown table: a row per case, its figures, and whether it met the gates (the missed lines when not). */
export function gateMarkdown(r: GateReport): string {
  const failed = r.cases.filter((c) => c.missed.length > 0).length;
  const head = ['', ...r.columns.map((c) => c.label), 'gate'];
  const rows = r.cases.map((c) => [cell(c.name), ...r.columns.map((col) => (col.figure in c.figures ? col.show(c.figures[col.figure]) : '')), c.missed.length === 0 ? 'met' : `**missed**: ${cell(c.missed.join('; '))}`]);
  return [
    `### ${cell(r.title)}: ${failed === 0 ? 'every gate met' : `${failed} of ${r.cases.length} missed a gate`}`,
    '',
    `Gates: \`${r.gates.replace(/`/g, "'")}\``,
    '',
    `| ${head.join(' | ')} |`,
    `| ${head.map((_, i) => (i === 0 || i === head.length - 1 ? '---' : '---:')).join(' | ')} |`,
    ...rows.map((row) => `| ${row.join(' | ')} |`),
    '',
  ].join('\n');
}

/** --junit and --markdown as asked; without --markdown, the table appended to $GITHUB_STEP_SUMMARY when set. */
export function writeGateReports(r: GateReport, files: { junit?: string; markdown?: string }, env: NodeJS.ProcessEnv = process.env): void {
  if (files.junit !== undefined) writeWhole(files.junit, junitXml(r));
  if (files.markdown !== undefined) writeWhole(files.markdown, gateMarkdown(r));
  else if (env.GITHUB_STEP_SUMMARY) appendFileSync(env.GITHUB_STEP_SUMMARY, `${gateMarkdown(r)}\n`);
}

/** Columns for a run's or suite's table: ops/s, then the percentiles the gates or the defaults name. */
export function runColumns(figures: string[]): GateReport['columns'] {
  const latency = [...new Set(['p50', 'p99', ...figures.filter((f) => /^p/.test(f))])];
  return [
    { figure: 'ops', label: 'ops/s', show: (v) => v.toFixed(0) },
    ...latency.map((f) => ({ figure: f, label: `${f} us`, show: (v: number) => v.toFixed(1) })),
    ...(figures.includes('errors') ? [{ figure: 'errors', label: 'errors', show: (v: number) => `${Number((v * 100).toPrecision(3))}%` }] : []),
  ];
}

/**
 * After the output: a line per missed figure on stderr, the reports written;
 * true when any case missed a gate (the command then exits 5).
 */
export function finishGates(stderr: (text: string) => void, report: GateReport, files: { junit?: string; markdown?: string }, env: NodeJS.ProcessEnv = process.env): boolean {
  const missed = report.cases.flatMap((c) => c.missed);
  for (const line of missed) stderr(`respbench: gate missed: ${line}\n`);
  writeGateReports(report, files, env);
  return missed.length > 0;
}
