/**
 * The study's four files, each rewritten whole after every finished run
 * (written to a temp file, then renamed over the old one), so whatever stops
 * the study — Ctrl-C, a dead server, a crash — leaves complete files with
 * every finished round, never a half-written one.
 */
import { existsSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { detailCsv, htmlReport, markdownReport, summarize, summaryCsv, type Lang, type RunRow, type StudyInfo } from '@respbench/report';
import { mergeLatency } from './latency.js';

export interface OutputPaths {
  detail: string;
  summary: string;
  markdown: string;
  html: string;
}

/**
 * `<out>/<name>_detail_<ts>.csv`, `<name>_summary_<ts>.csv`, `<name>_<ts>.md`,
 * `<name>_<ts>.html`. Two studies started in the same second must not
 * overwrite each other: the second gets `<ts>_2`, and so on.
 */
export function outputPaths(outDir: string, name: string, stamp: string): OutputPaths {
  for (let n = 1; ; n++) {
    const paths = pathsFor(outDir, name, n === 1 ? stamp : `${stamp}_${n}`);
    if (!Object.values(paths).some((p) => existsSync(p))) return paths;
  }
}

function pathsFor(outDir: string, name: string, stamp: string): OutputPaths {
  return {
    detail: path.join(outDir, `${name}_detail_${stamp}.csv`),
    summary: path.join(outDir, `${name}_summary_${stamp}.csv`),
    markdown: path.join(outDir, `${name}_${stamp}.md`),
    html: path.join(outDir, `${name}_${stamp}.html`),
  };
}

export function writeWhole(file: string, text: string): void {
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, text);
  renameSync(tmp, file);
}

/** Renders every output from the rows so far and replaces the files; returns the Markdown. */
export function writeOutputs(paths: OutputPaths, rows: RunRow[], study: StudyInfo, lang: Lang): string {
  mkdirSync(path.dirname(paths.detail), { recursive: true });
  const summaries = summarize(rows, study, { mergeLatency });
  const markdown = markdownReport(summaries, study, lang);
  writeWhole(paths.detail, detailCsv(rows));
  writeWhole(paths.summary, summaryCsv(summaries, study.baseline));
  writeWhole(paths.markdown, markdown);
  writeWhole(paths.html, htmlReport(summaries, study, lang));
  return markdown;
}
