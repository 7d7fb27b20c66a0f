/**
 * `--html <file>` for one run and for `respbench merge`: the RunResult as a
 * self-contained page (@respbench/report's runHtml) — metadata, Plan and
 * target, the figures per command, and the time series over time. Written
 * whole (a temp file renamed over the file), like the study's outputs.
 */
import type { RunPage } from '@respbench/report';
import { toolVersion } from './meta.js';
import { describeWorkload, formatHuman, targetText } from './output.js';
import { printable } from './printable.js';
import { redactPlan, type RunResult } from './run.js';
import { checkWritableFile, fsErrorText, writeWhole } from './files.js';

/** Before the run: a --html file that cannot be written is said now, not after the run. */
export function checkHtmlTarget(file: string): void {
  checkWritableFile('--html', file);
}

/** The page's parts from a RunResult (a run's, or merge's); `warnings` go under the metadata. */
export function runPageOf(r: RunResult, warnings: string[] = []): RunPage {
  const m = r.meta;
  const merged = (r as RunResult & { merged?: { files: string[]; clientCount: number; startSpreadMs: number } }).merged;
  const meta = [
    m ? `${m.tool} ${m.version} · engine ${m.engine} · load machine ${m.hostname}` : `respbench ${toolVersion()} · engine ${r.engine}`,
    `started ${m?.startedAt ?? (r.startedUnixMs ? new Date(r.startedUnixMs).toISOString() : 'unknown')} (UTC) · measured ${r.elapsedSec.toFixed(3)} s`,
    ...(m && m.commandLine.length > 0 ? [`command line: respbench ${m.commandLine.join(' ')}`] : []),
    ...(merged ? [`merged from ${merged.files.length} results (--client-count ${merged.clientCount}), started ${(merged.startSpreadMs / 1000).toFixed(3)} s apart: ${merged.files.join(', ')}`] : []),
    `target ${targetText(r)}`,
    `workload: ${describeWorkload(r)}`,
  ].map(printable);
  const failures = [
    ...(r.failure ? [`FAILED (${r.failure.kind}): ${r.failure.message}`] : []),
    ...(r.errors > 0 ? [`${r.errors} error replies, first: ${r.firstError ?? ''}`] : []),
    ...(r.mismatches > 0 ? [`${r.mismatches} reads returned another value`] : []),
  ];
  const rows = r.perCommand ?? [];
  const keys = Object.keys(r.percentilesUs ?? {});
  // Two averages, named apart as everywhere: "avg us/op" is the terminal's elapsed / requests (inverse
  // throughput), "mean latency us" the mean of the per-request latencies; a page saying "avg us" for
  // the second beside a terminal saying "avg us/op" for the first read as one figure that disagreed.
  const header = ['command', 'requests', 'ops/s', 'avg us/op', 'mean latency us', ...keys.map((k) => `${k} us`), 'max us'];
  const usPerOp = (requests: number) => (requests > 0 ? ((r.elapsedSec * 1e6) / requests).toFixed(3) : '');
  const cells = rows.map((c) => [c.command, String(c.requests), c.opsPerSec.toFixed(1), usPerOp(c.requests), c.latencyUs.mean.toFixed(1), ...keys.map((k) => (c.percentilesUs?.[k] ?? 0).toFixed(1)), c.latencyUs.max.toFixed(1)]);
  return {
    title: `respbench${merged ? ' merge' : ''} · ${printable(targetText(r))} · ${m?.startedAt ?? ''}`.replace(/ · $/, ''),
    meta,
    warnings: [...warnings, ...failures].map(printable),
    table: { header, rows: cells, numeric: header.map((_, i) => i > 0) },
    series: r.series ?? [],
    figures: formatHuman(r),
    plan: JSON.stringify(shownPlan(r.plan), null, 2),
    latencyFrom: r.plan.rate > 0 ? 'intended' : 'written',
  };
}

/**
 * The Plan as the page shows it: secrets masked, and on a --duration run no
 * `requests` (the default count, which bounds nothing there, read as if the
 * run had sent a million requests).
 */
function shownPlan(plan: RunResult['plan']): unknown {
  const redacted = redactPlan(plan);
  if (plan.durationMs === 0) return redacted;
  const shown: Partial<RunResult['plan']> = { ...redacted };
  delete shown.requests;
  return shown;
}

/** Writes the page whole; a file that cannot be written is said on stderr, and the caller exits 1. */
export async function writeRunHtml(file: string, r: RunResult, warnings: string[], stderr: (text: string) => void): Promise<boolean> {
  // The report package (charts, tables, CSV) is loaded only when a page is written: a plain run does not pay for it at start-up.
  const { runHtml } = await import('@respbench/report');
  try {
    writeWhole(file, runHtml(runPageOf(r, warnings)));
    return true;
  } catch (err) {
    stderr(`respbench: cannot write --html ${printable(file)}: ${fsErrorText(err)}\n`);
    return false;
  }
}
