/**
 * What `-t` prints: each test's line as it finishes (redis-benchmark's -q
 * form, or CSV), or at the end JSON or the side-by-side table of two
 * targets; error lines on stderr; and the exit status of the whole suite.
 */
import { EXIT } from './exit.js';
import { LatencyHistogram } from './engine-js/histogram.js';
import type { Engine, EngineName, Plan } from './engine-js/plan.js';
import { clusterText, jsonView } from './output.js';
import { writeWhole } from './files.js';
import { resultJsonText } from './result-json.js';
import type { RunOptions } from './engine-js/progress.js';
import { printable, printableTarget } from './printable.js';
import { exitCodeFor, interruptionOf, type Interruption } from './run.js';
import { comparisonTable, CSV_HEADER, csvLine, quietLine, runSuite, type SuiteLine, type SuiteTest } from './suite.js';

/**
 * The line printed before the suite runs: what redis-benchmark would be
 * told (connections, pipeline, size, keys) and what respbench adds.
 */
export function suiteHeader(engine: EngineName, plan: Plan, tests: SuiteTest[], compare: Target | null, names?: { a: string; b: string }): string {
  const target = printableTarget(plan.host, plan.port);
  const keys = plan.randIntLiteral
    ? `keys: ${plan.cluster ? '' : 'one per test, '}__rand_int__ left as written (no -r, as redis-benchmark)`
    : `keys: __rand_int__ = 12 digits drawn from [0, ${plan.keyspace}) (-r)`;
  const prefix = plan.keyPrefix === '' ? '' : `, key prefix ${printable(plan.keyPrefix)} (an addition)`;
  // As redis-benchmark --cluster's key:{tag}:__rand_int__ (suite.ts keyName).
  const tagged = plan.cluster ? `; under --cluster each key holds a hash tag, key:{n}:… and mylist:{n}, n a draw from [0, ${plan.keyspace}), so a request's keys share a slot and requests spread over the primaries, and lists and sets are one per tag (a list holds about ${Math.max(1, Math.round(plan.requests / plan.keyspace))} elements, -n / -r, so LRANGE reads no more)` : '';
  return [
    `respbench -t · engine ${engine} · target ${target}${clusterText(plan)}${compare ? ` vs ${targetName(compare)}${names && (names.a !== target || names.b !== targetName(compare)) ? ` (${names.a} vs ${names.b})` : ''}` : ''} · seed ${plan.seed}`,
    `tests ${tests.map((t) => t.name).join(',')}: ${plan.requests} requests per test, ${plan.connections} connections, pipeline ${plan.pipeline}${plan.pipeline === 1 ? '' : plan.pipelineMode === 'batch' ? ' (batch: send N, wait for all N, as redis-benchmark)' : ' (window: a request goes out as each reply comes)'}, value ${valueSize(plan)}, ${keys}${prefix}${tagged}`,
    'additions to redis-benchmark: p50 is per-request latency (reply parsed - request written, even when pipelined); errors are counted and shown',
  ].join('\n');
}

function valueSize(plan: Plan): string {
  return plan.valueSizeMin === plan.valueSizeMax ? `${plan.valueSizeMin} B` : `${plan.valueSizeMin}-${plan.valueSizeMax} B`;
}

function targetName(t: Target): string {
  return printableTarget(t.host, t.port);
}

export interface SuiteOutput {
  json: boolean;
  /** --pretty: the JSON indented. */
  pretty?: boolean;
  /** --json-file: the suite's JSON written there too (whole). */
  jsonFile?: string;
  csv: boolean;
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  /** Called before a line is printed (the live progress line goes away first). */
  beforeLine: () => void;
  /** With --compare: what to call the two targets (default host:port). */
  names?: { a: string; b: string };
  /** The signal that stopped the suite, if one did (recorded on the interrupted test's result). */
  signal?: () => Interruption['signal'] | null;
  /** --precision: the p50's decimal places in msec (default 3). */
  precision?: number;
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
): Promise<{ code: number; lines: SuiteLine[] }> {
  const print = (line: SuiteLine) => {
    const signal = out.signal?.();
    if (signal && line.result.failure?.kind === 'interrupted') line.result.interrupted = interruptionOf(signal, line.result);
    out.beforeLine();
    if (out.json || compare) return;
    if (out.csv) {
      const h = LatencyHistogram.fromData(line.result.histogram);
      // A row cut short (Ctrl-C, a broken connection) must not read as a full one.
      const failure = line.result.failure;
      const marked = failure ? { ...line, label: `${line.label} (${failure.kind === 'interrupted' ? 'interrupted' : `failed: ${failure.kind}`})` } : line;
      out.stdout(`${csvLine(marked, h.valueAtPercentile(95) / 1000, h.min() / 1000)}\n`);
    } else out.stdout(`${quietLine(line, out.precision)}\n`);
  };
  if (out.csv && !out.json && !compare) out.stdout(`${CSV_HEADER}\n`);
  const a = await runSuite(engine, plan, tests, print, runOptions);
  let b: SuiteLine[] = [];
  if (compare && runOptions.signal?.aborted) {
    // Interrupted on target A: target B is not started; what A measured is printed as it is.
    emitJson(out, { a: a.map(lineJson), b: [] });
    if (!out.json) out.stdout(`A = ${printableTarget(plan.host, plan.port)}, B = ${printableTarget(compare.host, compare.port)} (not run: interrupted)\n${a.map((line) => quietLine(line, out.precision)).join('\n')}\n`);
  } else if (compare) {
    b = await runSuite(engine, { ...plan, ...compare }, tests, print, runOptions);
    const rows = a.filter((line) => b.some((o) => o.label === line.label)).map((line) => ({ label: line.label, a: line.result, b: b.find((o) => o.label === line.label)!.result }));
    // Every ratio reads "this target as % of the second" (the study's "vs baseline" too).
    const nameA = out.names?.a ?? targetName(plan);
    const nameB = out.names?.b ?? targetName(compare);
    emitJson(out, { a: a.map(lineJson), b: b.map(lineJson), ratio: `${nameA} ops/s as % of ${nameB}` });
    if (!out.json) out.stdout(`${nameA} vs ${nameB}: ${nameA}'s ops/s as a percentage of ${nameB}'s\n${comparisonTable(rows, nameA, nameB)}\n`);
  } else {
    emitJson(out, a.map(lineJson));
  }
  const sides: [SuiteLine[], Target][] = compare ? [[a, plan], [b, compare]] : [[a, plan]];
  reportProblems(out, sides, compare !== null);
  return { code: worstExitCode([...a, ...b].map((line) => exitCodeFor(line.result))), lines: a };
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

/** The suite's JSON (result-json.ts's file form) on stdout with --json, and into --json-file. */
function emitJson(out: SuiteOutput, value: unknown): void {
  if (!out.json && out.jsonFile === undefined) return;
  const text = `${resultJsonText(value, out.pretty)}\n`;
  if (out.json) out.stdout(text);
  if (out.jsonFile !== undefined) writeWhole(out.jsonFile, text);
}

function lineJson(line: SuiteLine) {
  return { test: line.test, label: line.label, result: jsonView(line.result) };
}
