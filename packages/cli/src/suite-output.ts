/**
 * What `-t` prints: each test's line as it finishes (redis-benchmark's -q
 * form, or CSV), or at the end JSON or the side-by-side table of two
 * targets; error lines on stderr; and the exit status of the whole suite.
 */
import { EXIT } from './exit.js';
import { LatencyHistogram } from './engine-js/histogram.js';
import type { Engine, Plan } from './engine-js/plan.js';
import type { RunOptions } from './engine-js/progress.js';
import { printable, printableTarget } from './printable.js';
import { exitCodeFor } from './run.js';
import { comparisonTable, CSV_HEADER, csvLine, quietLine, runSuite, type SuiteLine, type SuiteTest } from './suite.js';

export interface SuiteOutput {
  json: boolean;
  csv: boolean;
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  /** Called before a line is printed (the live progress line goes away first). */
  beforeLine: () => void;
}

export type Target = { host: string; port: number };

/**
 * The suite's status is its worst test's: a run that broke off outranks
 * reads that did not verify, which outrank error replies; an interrupt
 * outranks all. (Not the numeric maximum: EXIT.failed is 1.)
 */
const SUITE_EXIT_SEVERITY: readonly number[] = [EXIT.ok, EXIT.errorReplies, EXIT.verifyFailed, EXIT.failed, EXIT.sigint, EXIT.sigterm];

export function worstExitCode(codes: number[]): number {
  let worst: number = EXIT.ok;
  for (const code of codes) if (SUITE_EXIT_SEVERITY.indexOf(code) > SUITE_EXIT_SEVERITY.indexOf(worst)) worst = code;
  return worst;
}

/** Runs the suite on `plan`'s target (and `compare`'s), prints it; resolves to the exit status. */
export async function runSuiteCommand(
  engine: Engine,
  plan: Plan,
  tests: SuiteTest[],
  compare: Target | null,
  out: SuiteOutput,
  runOptions: RunOptions,
): Promise<number> {
  const print = (line: SuiteLine) => {
    out.beforeLine();
    if (out.json || compare) return;
    if (out.csv) {
      const h = LatencyHistogram.fromData(line.result.histogram);
      // A row cut short (Ctrl-C, a broken connection) must not read as a full one.
      const failure = line.result.failure;
      const marked = failure ? { ...line, label: `${line.label} (${failure.kind === 'interrupted' ? 'interrupted' : `failed: ${failure.kind}`})` } : line;
      out.stdout(`${csvLine(marked, h.valueAtPercentile(95) / 1000, h.min() / 1000)}\n`);
    } else out.stdout(`${quietLine(line)}\n`);
  };
  if (out.csv && !out.json && !compare) out.stdout(`${CSV_HEADER}\n`);
  const a = await runSuite(engine, plan, tests, print, runOptions);
  let b: SuiteLine[] = [];
  if (compare && runOptions.signal?.aborted) {
    // Interrupted on target A: target B is not started; what A measured is printed as it is.
    if (out.json) out.stdout(`${JSON.stringify({ a: a.map(lineJson), b: [] }, null, 2)}\n`);
    else out.stdout(`A = ${printableTarget(plan.host, plan.port)}, B = ${printableTarget(compare.host, compare.port)} (not run: interrupted)\n${a.map((line) => quietLine(line)).join('\n')}\n`);
  } else if (compare) {
    b = await runSuite(engine, { ...plan, ...compare }, tests, print, runOptions);
    const rows = a.filter((line) => b.some((o) => o.label === line.label)).map((line) => ({ label: line.label, a: line.result, b: b.find((o) => o.label === line.label)!.result }));
    if (out.json) out.stdout(`${JSON.stringify({ a: a.map(lineJson), b: b.map(lineJson) }, null, 2)}\n`);
    else out.stdout(`A = ${printableTarget(plan.host, plan.port)}, B = ${printableTarget(compare.host, compare.port)}\n${comparisonTable(rows, 'A', 'B')}\n`);
  } else if (out.json) {
    out.stdout(`${JSON.stringify(a.map(lineJson), null, 2)}\n`);
  }
  const sides: [SuiteLine[], Target][] = compare ? [[a, plan], [b, compare]] : [[a, plan]];
  reportProblems(out, sides, compare !== null);
  return worstExitCode([...a, ...b].map((line) => exitCodeFor(line.result)));
}

/** Failures always go to stderr; error replies too when the printed form would not show them. */
function reportProblems(out: SuiteOutput, sides: [SuiteLine[], Target][], compared: boolean): void {
  for (const [lines, target] of sides) {
    for (const line of lines) {
      const where = compared ? `${printableTarget(target.host, target.port)} ` : '';
      if (line.result.failure) out.stderr(`respbench: ${where}${line.label}: ${printable(line.result.failure.message)}\n`);
      else if (line.result.errors > 0 && (compared || out.json || out.csv)) {
        out.stderr(`respbench: ${where}${line.label}: ${line.result.errors} error replies, first: ${printable(line.result.firstError ?? '')}\n`);
      }
    }
  }
}

function lineJson(line: SuiteLine) {
  return { test: line.test, label: line.label, result: line.result };
}
