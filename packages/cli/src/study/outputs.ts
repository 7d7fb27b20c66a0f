/**
 * The study's five files. Whatever stops the study — Ctrl-C, a dead server,
 * a crash — leaves complete files with every finished round, never a
 * half-written one: the detail CSV grows by one appended row per finished
 * run and the series CSV by that run's intervals (each cut back to its
 * last whole row if the append fails), and the summaries (summary CSV,
 * Markdown, HTML) are rewritten whole — to a temp
 * file, then renamed over the old one — at most every few seconds and at the
 * end, so a study of many rounds costs the same per run at its end as at its
 * start.
 *
 * A disk that fills up (or goes read-only) half-way does not stop the study:
 * the file that could not be written is named once on stderr, no temp file
 * is left, and the tables are still printed at the end.
 */
import { appendWhole, fsErrorText, writeWhole } from '../files.js';
import {
  existsSync,
  mkdirSync,
  rmSync,
  writeFileSync,
  accessSync,
  constants as fsConstants,
} from 'node:fs';
import path from 'node:path';
import { detailCsv, htmlReport, markdownReport, seriesCsv, summarize, summaryCsv, type Lang, type RunRow, type StudyInfo } from '@respbench/report';
import { mergeLatency, mergePercentiles } from './latency.js';

export interface OutputPaths {
  detail: string;
  /** Every run's time series, a row per interval (beside the detail CSV). */
  series: string;
  summary: string;
  markdown: string;
  html: string;
}

/**
 * `<out>/<name>_detail_<ts>.csv`, `<name>_series_<ts>.csv`, `<name>_summary_<ts>.csv`, `<name>_<ts>.md`,
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
    series: path.join(outDir, `${name}_series_${stamp}.csv`),
    summary: path.join(outDir, `${name}_summary_${stamp}.csv`),
    markdown: path.join(outDir, `${name}_${stamp}.md`),
    html: path.join(outDir, `${name}_${stamp}.html`),
  };
}

/** `<out>/<name>_<ts>_<scenario>.log`: where a started target's stdout and stderr go. */
export function targetLogPath(paths: OutputPaths, scenario: string): string {
  return `${paths.markdown.replace(/\.md$/, '')}_${scenario.replace(/[^\w.-]+/g, '_')}.log`;
}

/** The longest file name ext4, xfs and btrfs take, in bytes. */
export const MAX_FILE_NAME_BYTES = 255;
/** What writeWhole adds to a name for its temp file: `.<pid>.tmp`, the pid at most 7 digits (Linux's pid_max). */
const TEMP_SUFFIX_BYTES = '.4194304.tmp'.length;

/**
 * The output (or target log) file name that is past what a file system
 * takes once written whole, or null: checked before the study starts, so a
 * long study name is refused then rather than after its last round.
 * `logged`: the scenarios whose targets the study starts (they get a log).
 */
export function tooLongFileName(paths: OutputPaths, logged: string[]): { name: string; bytes: number } | null {
  const names = [...Object.values(paths), ...logged.map((s) => targetLogPath(paths, s))].map((p) => path.basename(p));
  for (const name of names) {
    const bytes = Buffer.byteLength(name, 'utf8') + TEMP_SUFFIX_BYTES;
    if (bytes > MAX_FILE_NAME_BYTES) return { name, bytes };
  }
  return null;
}

/** Thrown when --out cannot hold the study's files at all (checked before anything starts). */
export class OutputDirError extends Error {}

/**
 * Makes sure `dir` exists and takes a new file, before the study starts
 * anything. A failed `mkdir -p` reports why the nearest existing parent
 * refused (read-only, permissions), not the ENOENT of the missing child.
 */
export function checkOutputDir(dir: string): void {
  try {
    mkdirSync(dir, { recursive: true });
  } catch (err) {
    throw new OutputDirError(`--out ${dir}: cannot create the directory: ${fsErrorText(whyNotCreated(dir, err))}`);
  }
  const probe = path.join(dir, `.respbench-write-check-${process.pid}`);
  try {
    writeFileSync(probe, '');
  } catch (err) {
    throw new OutputDirError(`--out ${dir}: cannot write there: ${fsErrorText(err)}`);
  } finally {
    rmSync(probe, { force: true });
  }
}

function whyNotCreated(dir: string, err: unknown): unknown {
  if ((err as NodeJS.ErrnoException).code !== 'ENOENT') return err;
  for (let d = path.dirname(path.resolve(dir)); ; d = path.dirname(d)) {
    if (existsSync(d)) {
      try {
        accessSync(d, fsConstants.W_OK);
      } catch (e) {
        return e;
      }
      return err;
    }
    if (d === path.dirname(d)) return err;
  }
}


/** How often the summaries may be rewritten while the study runs. */
export const SUMMARY_EVERY_MS = 5_000;

/** What the last write left on disk. */
export interface WriteOutcome {
  /** The Markdown report (also what the study prints), whether or not its file was written. */
  markdown: string;
  /** Files that could not be written, with why. */
  failed: { file: string; why: string }[];
}

/** The study's files as the study goes: appended detail, summaries now and then, everything at the end. */
export class StudyOutputs {
  /** The detail file's header line, once it has been written whole; null: rewrite it whole next time. */
  private detailHeader: string | null = null;
  /** Rows in the detail file. */
  private detailRows = 0;
  /** Runs whose intervals are in the series file; -1: rewrite it whole next time. */
  private seriesRuns = -1;
  private lastSummaryMs = -Infinity;
  /** Files already reported as not writable (each is named once). */
  private readonly reported = new Set<string>();

  constructor(
    private readonly paths: OutputPaths,
    private readonly lang: Lang,
    private readonly warn: (message: string) => void,
    private readonly summaryEveryMs = SUMMARY_EVERY_MS,
    /** The study's chosen percentiles (StudyInfo.percentiles): the detail CSV's columns. */
    private readonly percentiles?: readonly number[],
  ) {}

  /** After a finished run: its row goes on the detail CSV; the summaries follow if they are due. */
  update(rows: RunRow[], study: () => StudyInfo): void {
    const failed: WriteOutcome['failed'] = [];
    this.writeDetail(rows, failed);
    this.writeSeries(rows, failed);
    if (Date.now() - this.lastSummaryMs >= this.summaryEveryMs) this.writeSummaries(rows, study(), failed);
    this.report(failed);
  }

  /** Every file, now (at the start and at the end). */
  writeAll(rows: RunRow[], study: StudyInfo): WriteOutcome {
    const failed: WriteOutcome['failed'] = [];
    this.writeDetail(rows, failed);
    this.writeSeries(rows, failed);
    const markdown = this.writeSummaries(rows, study, failed);
    this.report(failed);
    return { markdown, failed };
  }

  private report(failed: WriteOutcome['failed']): void {
    for (const { file, why } of failed) {
      if (this.reported.has(file)) continue;
      this.reported.add(file);
      this.warn(`cannot write ${file}: ${why}; the study goes on, and its tables are printed at the end`);
    }
  }

  private attempt(file: string, failed: WriteOutcome['failed'], write: () => void): boolean {
    try {
      write();
      return true;
    } catch (err) {
      failed.push({ file, why: fsErrorText(err) });
      return false;
    }
  }

  private writeDetail(rows: RunRow[], failed: WriteOutcome['failed']): void {
    const file = this.paths.detail;
    // One more row whose columns match the file's header: append it.
    if (this.detailHeader !== null && rows.length === this.detailRows + 1) {
      const text = detailCsv(rows.slice(-1), this.percentiles);
      const cut = text.indexOf('\n') + 1;
      if (cut > 0 && text.slice(0, cut) === this.detailHeader) {
        if (this.attempt(file, failed, () => appendWhole(file, text.slice(cut)))) this.detailRows = rows.length;
        else this.detailHeader = null;
        return;
      }
    }
    if (rows.length === this.detailRows && this.detailHeader !== null) return;
    const text = detailCsv(rows, this.percentiles);
    if (this.attempt(file, failed, () => writeWhole(file, text))) {
      this.detailHeader = text.slice(0, text.indexOf('\n') + 1) || null;
      this.detailRows = rows.length;
    } else {
      this.detailHeader = null;
    }
  }

  /** The series CSV grows like the detail CSV: the last run's intervals appended, or the file rewritten whole. */
  private writeSeries(rows: RunRow[], failed: WriteOutcome['failed']): void {
    const file = this.paths.series;
    if (this.seriesRuns >= 0 && rows.length === this.seriesRuns + 1) {
      const text = seriesCsv(rows.slice(-1), false);
      if (text === '' || this.attempt(file, failed, () => appendWhole(file, text))) this.seriesRuns = rows.length;
      else this.seriesRuns = -1;
      return;
    }
    if (rows.length === this.seriesRuns) return;
    if (this.attempt(file, failed, () => writeWhole(file, seriesCsv(rows)))) this.seriesRuns = rows.length;
    else this.seriesRuns = -1;
  }

  private writeSummaries(rows: RunRow[], study: StudyInfo, failed: WriteOutcome['failed']): string {
    this.lastSummaryMs = Date.now();
    const summaries = summarize(rows, study, { mergeLatency, mergePercentiles, percentiles: study.percentiles });
    const markdown = markdownReport(summaries, study, this.lang);
    this.attempt(this.paths.summary, failed, () => writeWhole(this.paths.summary, summaryCsv(summaries, study.baseline, study.percentiles)));
    this.attempt(this.paths.markdown, failed, () => writeWhole(this.paths.markdown, markdown));
    this.attempt(this.paths.html, failed, () => writeWhole(this.paths.html, htmlReport(summaries, study, this.lang, rows)));
    return markdown;
  }
}
