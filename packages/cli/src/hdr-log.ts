/**
 * `--hdr-log <prefix>`: the result's latency histograms as HdrHistogram
 * interval logs (format 1.3, each histogram V2-compressed and base64-encoded),
 * the files HdrHistogram's HistogramLogProcessor, its plotters and other
 * HdrHistogram implementations read. Per command (the rows of perCommand):
 *
 *   <prefix>.<COMMAND>.hlog      one line per interval of the time series
 *   <prefix>.<COMMAND>.run.hlog  one line: the whole measured phase
 *
 * with `Totals` as the last command. Encoding is hdr-histogram-js's (the
 * codec is not ours); the buckets come from the result's JSON (both engines,
 * and `respbench merge`, give the same shape), each recorded at its lowest
 * equivalent value into a histogram of the same layout (1 ns .. 2^40 ns, 3
 * significant digits), so the decoded counts and percentiles are the JSON's.
 */
import { accessSync, constants, statSync } from 'node:fs';
import path from 'node:path';
import type HdrLib from 'hdr-histogram-js';
import { hdrLib } from './result-json.js';
import { addHistogramData } from './buckets.js';
import { HIGHEST_TRACKABLE_NS, type HistogramData } from './engine-js/histogram.js';
import type { RawInterval } from './engine-js/plan.js';
import { printable } from './printable.js';
import { commandName, mixRowNames, type RunResult } from './run.js';
import { writeWhole } from './files.js';
import { foldShortTail } from './series.js';
import { UsageError } from './usage-error.js';

/** Interval_Max is written in ms (values / 1e6), as HdrHistogram's Java tools do for ns values. */
const MAX_VALUE_UNIT_RATIO = 1e6;

/** Checks before a run that the files can be written where the prefix points (exit 2 naming the flag otherwise). */
export function checkHdrLogPrefix(prefix: string, flag = '--hdr-log'): void {
  if (prefix === '' || prefix.endsWith('/')) throw new UsageError(`${flag} needs a file name prefix, e.g. results/run1 (got ${printable(prefix)})`);
  const dir = path.dirname(prefix);
  try {
    if (!statSync(dir).isDirectory()) throw new Error('not a directory');
    accessSync(dir, constants.W_OK);
  } catch {
    throw new UsageError(`${flag} ${printable(prefix)}: cannot write files in ${printable(dir)} (no such directory, or not writable)`);
  }
}

function toHdr(data: HistogramData): ReturnType<typeof HdrLib.build> {
  const hdr = hdrLib();
  const h = hdr.build({ lowestDiscernibleValue: 1, highestTrackableValue: HIGHEST_TRACKABLE_NS, numberOfSignificantValueDigits: 3, bitBucketSize: 64, autoResize: false, useWebAssembly: false });
  for (const [value, count] of data.buckets) if (count > 0) h.recordValueWithCount(value, count);
  return h;
}

/** One log: the header (version, what the values are, start/base time, legend), then a line per histogram. */
function logText(command: string, what: string, startedUnixMs: number, lines: { startSec: number; endSec: number; data: HistogramData }[]): string {
  const out: string[] = [];
  const writer = new (hdrLib().HistogramLogWriter)((s: string) => out.push(s));
  writer.outputLogFormatVersion();
  writer.outputComment(`respbench latency, ${command}: ${what}`);
  writer.outputComment('values: latency in nanoseconds (reply parsed - request written), lowest 1 ns, highest 2^40 ns, 3 significant digits');
  writer.outputComment('Interval_Max: milliseconds (HistogramLogProcessor\'s default -outputValueUnitRatio 1000000 reports milliseconds too)');
  // The header lines HdrHistogram's Java writer writes; timestamps below are seconds after BaseTime.
  const sec = (startedUnixMs / 1000).toFixed(3);
  out.push(`#[StartTime: ${sec} (seconds since epoch), ${new Date(startedUnixMs).toISOString()}]\n`);
  out.push(`#[BaseTime: ${sec} (seconds since epoch)]\n`);
  writer.outputLegend();
  for (const l of lines) writer.outputIntervalHistogram(toHdr(l.data), l.startSec, l.endSec, MAX_VALUE_UNIT_RATIO);
  return out.join('');
}

/** A command name as a file name part. */
function fileWord(name: string): string {
  return name.replace(/[^A-Za-z0-9_.-]/g, '_');
}

/** The files --hdr-log writes for a result: name → content. */
export function hdrLogFiles(result: RunResult, prefix: string): Map<string, string> {
  const plan = result.plan;
  const started = result.startedUnixMs ?? Date.now();
  const intervals: RawInterval[] = foldShortTail(result.intervals ?? []);
  const empty: HistogramData = { unit: 'ns', significantDigits: 3, buckets: [] };
  const rows: { name: string; whole: HistogramData; of: (i: RawInterval) => HistogramData }[] = [];
  const mix = mixRowNames(plan);
  if (mix && result.commandHistograms) {
    // A command mix: a log per command of the mix, named as its perCommand row (SET, GET, SET#2, …).
    mix.forEach((name, k) => rows.push({ name, whole: result.commandHistograms![k], of: (i) => i.commandHistograms?.[k] ?? empty }));
  } else if (result.setHistogram && result.getHistogram) {
    if (plan.mode !== 'get') rows.push({ name: commandName(plan.setCmd), whole: result.setHistogram, of: (i) => i.setHistogram ?? empty });
    if (plan.mode !== 'set') rows.push({ name: commandName(plan.getCmd), whole: result.getHistogram, of: (i) => i.getHistogram ?? empty });
  }
  // Two templates with the same first word (EVAL … / EVAL …): tell the files apart by side.
  if (rows.length === 2 && rows[0].name === rows[1].name) {
    rows[0].name += '.set';
    rows[1].name += '.get';
  }
  rows.push({ name: 'Totals', whole: result.histogram, of: (i) => addHistogramData(i.setHistogram ?? empty, i.getHistogram ?? empty) });
  const files = new Map<string, string>();
  const elapsedSec = result.elapsedNs / 1e9;
  const bases = new Set<string>();
  for (const r of rows) {
    // Two rows whose names differ only in characters a file name cannot hold (GET#1, GET_1) keep apart.
    let base = `${prefix}.${fileWord(r.name)}`;
    for (let n = 2; bases.has(base); n++) base = `${prefix}.${fileWord(r.name)}.${n}`;
    bases.add(base);
    files.set(`${base}.hlog`, logText(r.name, 'one histogram per interval of the time series', started, intervals.map((i) => ({ startSec: i.startNs / 1e9, endSec: i.endNs / 1e9, data: r.of(i) }))));
    files.set(`${base}.run.hlog`, logText(r.name, 'the whole measured phase', started, [{ startSec: 0, endSec: elapsedSec, data: r.whole }]));
  }
  return files;
}

/**
 * Writes the result's HdrHistogram logs; returns the files written. Each is
 * written whole, as --html is (a temp file renamed over it): an existing
 * file is replaced at once, and a symlink of that name is replaced, never
 * written through.
 */
export function writeHdrLogs(result: RunResult, prefix: string): string[] {
  const files = hdrLogFiles(result, prefix);
  for (const [name, text] of files) {
    try {
      writeWhole(name, text);
    } catch (err) {
      throw new Error(`--hdr-log: cannot write ${printable(name)}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    }
  }
  return [...files.keys()];
}
