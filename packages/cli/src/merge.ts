/**
 * `respbench merge a.json b.json …`: one result from several load machines
 * (--client-index/--client-count), each run's `--json`. Counters and
 * histograms add (the histograms share one bucket layout); the time series
 * are aligned by wall clock; throughput is over the union of the runs'
 * windows. Runs of different Plans (other than the client index) are refused.
 */
import { addedCounters } from './added-counters.js';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { writeHdrLogs } from './hdr-log.js';
import { LatencyHistogram, type HistogramData } from './engine-js/histogram.js';
import type { Plan, RawInterval, RawResult } from './engine-js/plan.js';
import { Exit, EXIT } from './exit.js';
import { onStopSignals, SIGNAL_EXIT, type StopSignal } from './interrupt.js';
import { readMergeInput, type CompactInterval, type MergeInput } from './merge-input.js';
import { addIntervals } from './series.js';
import type { CliIo } from './io.js';
import { writeRunHtml } from './html-report.js';
import { writeWhole } from './files.js';
import { formatHuman, formatJson } from './output.js';
import { printable } from './printable.js';
import { exitCodeFor, finishResult, type RunResult } from './run.js';
import { maskArgv, runMeta, type RunMeta } from './meta.js';
import { redactSecrets } from './secrets.js';
import { UsageError } from './usage-error.js';

/** Runs whose starts lie further apart than this are merged with a warning: their windows barely overlap. */
export const START_SPREAD_WARN_MS = 1000;

/** What merge adds to the result: which runs, and how far apart they started. */
export interface MergedFrom {
  files: string[];
  /** The runs' --client-count. */
  clientCount: number;
  /** Latest start − earliest start of the runs' measured phases, ms. */
  startSpreadMs: number;
  /** Each result's own metadata, in the order given (null for a result that had none). */
  machines: Array<{ file: string; meta: RunMeta | null }>;
}

export interface MergeFlags {
  json: boolean;
  /** --pretty / --json=pretty: indented JSON; --json-file: the result also written whole to this file. */
  pretty: boolean;
  jsonFile?: string;
  html?: string;
  hdrLog?: string;
}

/** What the merge worker tells the command: text to print, that the result is out, and how it ended. */
export type MergeMessage =
  | { stdout: string }
  | { stderr: string }
  | { done: number }
  | { usage: string }
  | { failed: string };

/**
 * The merge itself runs on a worker thread: reading, adding and formatting a
 * long run's files is seconds of work that would keep the event loop (and
 * so a Ctrl-C) waiting. A signal before the result is printed ends the work
 * at once (exit 130/143); after it, the --html page and --hdr-log files it
 * asked for are still written, then the same exit status.
 */
export async function mergeAwayFromSignals(files: string[], opts: MergeFlags, io: CliIo, argv: readonly string[]): Promise<void> {
  const script = new URL('./merge-worker.js', import.meta.url);
  // From the TypeScript sources (no compiled worker beside this file) the merge runs here.
  if (!existsSync(fileURLToPath(script))) return mergeFiles(files, opts, io, argv);
  const worker = new Worker(script, { workerData: { files, opts, argv }, stdout: false, stderr: false });
  let printed = false;
  let stoppedBy: StopSignal | null = null;
  const stopListening = onStopSignals((signal, n) => {
    if (n > 1) return io.stderr(`respbench: ${signal}: already stopping\n`);
    stoppedBy = signal;
    if (printed) io.stderr(`respbench: ${signal}: writing the files asked for, then stopping\n`);
    else {
      io.stderr(`respbench: ${signal}: interrupted while merging: nothing merged\n`);
      void worker.terminate();
    }
  });
  try {
    const code = await new Promise<number>((resolve, reject) => {
      worker.on('message', (m: MergeMessage) => {
        // merge's stdout is its result only: once that is shown, a signal still lets the files asked for be written
        // (a separate "printed" message after it left a gap in which a signal found the result shown and the files not wanted).
        if ('stdout' in m) {
          printed = true;
          io.stdout(m.stdout);
        } else if ('stderr' in m) io.stderr(m.stderr);
        else if ('done' in m) resolve(m.done);
        else if ('usage' in m) reject(new UsageError(m.usage));
        else reject(new Error(m.failed));
      });
      worker.on('error', reject);
      worker.on('exit', () => resolve(stoppedBy ? SIGNAL_EXIT[stoppedBy] : EXIT.failed));
    });
    if (stoppedBy) throw new Exit(SIGNAL_EXIT[stoppedBy]);
    if (code !== EXIT.ok) throw new Exit(code);
  } finally {
    stopListening();
    await worker.terminate();
  }
}

/** Reads, checks and adds the files, prints the result and writes the files asked for (on the worker thread, or here). */
export async function mergeFiles(files: string[], opts: MergeFlags, io: CliIo, argv: readonly string[]): Promise<void> {
  const inputs: MergeInput[] = [];
  // One file at a time, each kept compact: memory is what the inputs hold, not their text.
  for (const f of files) inputs.push(await readMergeInput(f));
  const { result, warnings } = mergeResults(inputs, files, argv);
  for (const w of warnings) io.stderr(`respbench: warning: ${w}\n`);
  io.stdout(`${opts.json ? formatJson(result, opts.pretty) : formatHuman(result)}\n`);
  if (opts.jsonFile !== undefined) writeWhole(opts.jsonFile, `${formatJson(result, opts.pretty)}\n`);
  if (opts.hdrLog !== undefined) writeHdrLogs(result, opts.hdrLog);
  const written = opts.html === undefined || (await writeRunHtml(opts.html, result, warnings, io.stderr));
  const code = exitCodeFor(result);
  if (code !== EXIT.ok) throw new Exit(code);
  if (!written) throw new Exit(EXIT.failed);
}

/** The Plan fields two runs may differ in and still be one run's shares (each machine pins its own CPUs). */
const SHARE_FIELDS = new Set(['clientIndex', 'cpus']);

/** The Plan fields two runs differ in, as they may be shown: a secret field (a hand-edited password) only as *** whatever it holds. */
function planDifferences(given: Plan, other: Plan): string[] {
  const a = redactSecrets(given);
  const b = redactSecrets(other);
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
  const out: string[] = [];
  for (const k of keys) {
    if (SHARE_FIELDS.has(k)) continue;
    const x = JSON.stringify((a as unknown as Record<string, unknown>)[k] ?? null);
    const y = JSON.stringify((b as unknown as Record<string, unknown>)[k] ?? null);
    if (x !== y) out.push(`${k} ${printable(x)} vs ${printable(y)}`);
  }
  return out;
}

function addHistograms(hs: (HistogramData | undefined | null)[]): HistogramData {
  const sum = new LatencyHistogram();
  for (const h of hs) if (h) sum.merge(LatencyHistogram.fromData(h));
  return sum.toData();
}

/** The runs' results as one: refuses runs of different Plans; warns when they started far apart. */
export function mergeResults(inputs: MergeInput[], names: string[], argv: readonly string[] = []): { result: RunResult; warnings: string[] } {
  if (inputs.length === 0) throw new UsageError('merge needs at least one result');
  const runs = inputs.map((i) => i.result);
  const first = runs[0];
  for (let i = 1; i < runs.length; i++) {
    const diff = planDifferences(first.plan, runs[i].plan);
    if (diff.length > 0) {
      throw new UsageError(`${printable(names[0])} and ${printable(names[i])} ran different Plans (${diff.join('; ')}): merge adds up the shares of one run (--client-index apart) only`);
    }
  }
  const seen = new Map<number, string>();
  for (let i = 0; i < runs.length; i++) {
    const index = runs[i].plan.clientIndex ?? 0;
    const other = seen.get(index);
    if (other !== undefined) throw new UsageError(`${printable(other)} and ${printable(names[i])} are both machine ${index} (--client-index): the same share twice`);
    seen.set(index, names[i]);
  }
  const warnings: string[] = [];
  const count = first.plan.clientCount ?? 1;
  if (runs.length !== count) warnings.push(`${runs.length} results for --client-count ${count}: the merged figures cover ${runs.length} of ${count} machines' shares`);
  const starts = runs.map((r) => r.startedUnixMs ?? 0);
  const minStart = Math.min(...starts);
  const startSpreadMs = Math.max(...starts) - minStart;
  if (startSpreadMs > START_SPREAD_WARN_MS) {
    warnings.push(`the runs started ${(startSpreadMs / 1000).toFixed(3)} s apart (by their machines' clocks): throughput is over the union of their windows, and is lower than the load they sent together`);
  }
  const end = Math.max(...runs.map((r) => (r.startedUnixMs ?? 0) + r.elapsedNs / 1e6));
  const sum = (f: (r: MergeInput['result']) => number | undefined) => runs.reduce((n, r) => n + (f(r) ?? 0), 0);
  const failed = runs.find((r) => r.failure !== null);
  const raw: RawResult = {
    engine: first.engine,
    ...addedCounters(runs),
    ...(runs.some((r) => r.staleReads !== undefined) ? { staleReads: sum((r) => r.staleReads) } : {}),
    elapsedNs: Math.round((end - minStart) * 1e6),
    histogram: addHistograms(runs.map((r) => r.histogram)),
    setHistogram: addHistograms(runs.map((r) => r.setHistogram)),
    getHistogram: addHistograms(runs.map((r) => r.getHistogram)),
    // A command mix: each command's histograms added across the machines (the Plans are the same, so the mixes are).
    ...(runs.every((r) => r.commandHistograms)
      ? { commandHistograms: runs[0].commandHistograms!.map((_, k) => addHistograms(runs.map((r) => r.commandHistograms![k]))) }
      : {}),
    preloadRequests: sum((r) => r.preloadRequests),
    preloadElapsedNs: Math.max(...runs.map((r) => r.preloadElapsedNs)),
    warmupRequests: sum((r) => r.warmupRequests),
    warmupElapsedNs: Math.max(...runs.map((r) => r.warmupElapsedNs ?? 0)),
    serviceHistogram: runs.every((r) => r.serviceHistogram) ? addHistograms(runs.map((r) => r.serviceHistogram)) : null,
    scheduleLagHistogram: runs.every((r) => r.scheduleLagHistogram) ? addHistograms(runs.map((r) => r.scheduleLagHistogram)) : null,
    eventLoopDelay: null,
    firstError: runs.find((r) => r.firstError)?.firstError ?? null,
    firstMismatch: runs.find((r) => r.firstMismatch)?.firstMismatch ?? null,
    failure: failed ? failed.failure : null,
    intervals: alignIntervals(inputs, minStart),
    startedUnixMs: minStart,
  };
  // The merged run is the single run the shares make up: every machine's connections.
  const { clientIndex: _index, clientCount: _count, cpus: _cpus, ...plan } = first.plan;
  const result = finishResult(plan, raw);
  // An input file's metadata is shown again: whatever secret a hand-edited one holds stays hidden.
  const machines = runs.map((r, i) => ({ file: names[i], meta: r.meta ? redactSecrets({ ...r.meta, commandLine: Array.isArray(r.meta.commandLine) ? maskArgv(r.meta.commandLine.map(String)) : r.meta.commandLine }) : null }));
  const merged: MergedFrom = { files: names, clientCount: count, startSpreadMs, machines };
  // The merged result's own metadata: this merge's command line, the earliest start, and the load machines it adds up.
  const hosts = [...new Set(runs.map((r) => r.meta?.hostname).filter((h): h is string => typeof h === 'string'))];
  const meta: RunMeta = { ...runMeta(first.engine, minStart, argv), hostname: hosts.length > 0 ? hosts.join(', ') : 'unknown' };
  return { result: { ...result, meta, merged } as RunResult, warnings };
}

/** Every run's intervals placed by wall clock on the earliest start's grid, those landing together added. */
function alignIntervals(inputs: MergeInput[], minStart: number): RawInterval[] {
  const every = inputs.flatMap((r) => r.intervals).reduce((m, i) => Math.max(m, i.endNs - i.startNs), 0);
  if (every <= 0) return [];
  const byIndex = new Map<number, CompactInterval[]>();
  for (const { result, intervals } of inputs) {
    const shift = Math.round((((result.startedUnixMs ?? minStart) - minStart) * 1e6) / every);
    for (const i of intervals) {
      const index = i.index + shift;
      const placed = { ...i, index, startNs: i.startNs + shift * every, endNs: i.endNs + shift * every };
      const had = byIndex.get(index);
      if (had) had.push(placed);
      else byIndex.set(index, [placed]);
    }
  }
  // The machines' records of one interval added as one run's threads' are (series.ts), packed as they were read.
  return [...byIndex.values()].map((records) => records.reduce(addIntervals)).sort((a, b) => a.index - b.index);
}
