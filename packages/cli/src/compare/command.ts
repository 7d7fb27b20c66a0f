/**
 * `respbench compare BASE NEW [NEW2 …]`: saved results side by side (each
 * NEW against BASE), NEW as a percentage of BASE per figure with a verdict,
 * the noise test named; exit 2 for results that do not compare.
 */
import type { Command } from 'commander';
import { Exit, EXIT } from '../exit.js';
import type { CliIo } from '../io.js';
import { printable } from '../printable.js';
import { checkWritableFile } from '../files.js';
import type { Comparison } from './compare.js';

export interface CompareFlags {
  json: boolean;
  pretty: boolean;
  failIf?: string;
  junit?: string;
  markdown?: string;
}

export function registerCompareCommand(program: Command, io: CliIo): void {
  program
    .command('compare')
    .description('saved results side by side: NEW as a percentage of BASE per command and figure, better / worse / within noise')
    .argument('<base>', 'the baseline: a --json result (run, merge, -t suite, capacity search) or a study summary CSV')
    .argument('<new...>', 'the results to compare with it, of the same kind and workload')
    .option('--json', 'print the comparison as JSON (one line; --pretty indents it)', false)
    .option('--pretty', 'with --json: indented', false)
    // CI gates (issue 22), the grammar of --slo (capacity/slo.ts).
    .option('--fail-if <changes>', "fail (exit 5, a line per figure) when NEW moved this far from BASE beyond the noise, e.g. 'ops<-5%,p99>+10%'")
    .option('--junit <file>', 'write the gate as JUnit XML: a testcase per compared row, a failure with the figures that failed')
    .option('--markdown <file>', 'write the comparison as a Markdown table (default: appended to $GITHUB_STEP_SUMMARY when that is set)')
    .action(async (baseFile: string, newFiles: string[], opts: CompareFlags) => {
      // The comparison's modules load when it runs, not with the program: a run parses none of them.
      const [{ resultJsonText }, { finishGates }, { compareGateCases, parseFailIf }, { compareResults }, { readComparable }] = await Promise.all([
        import('../result-json.js'),
        import('../gate-reports.js'),
        import('../gates.js'),
        import('./compare.js'),
        import('./figures.js'),
      ]);
      const gates = opts.failIf === undefined ? [] : parseFailIf(opts.failIf);
      if (opts.junit !== undefined) checkWritableFile('--junit', opts.junit);
      if (opts.markdown !== undefined) checkWritableFile('--markdown', opts.markdown);
      const base = readComparable(baseFile);
      const comparisons = newFiles.map((f) => compareResults(base, readComparable(f)));
      for (const c of comparisons) for (const w of c.warnings) io.stderr(`respbench: warning: ${w}\n`);
      if (opts.json) io.stdout(`${resultJsonText(comparisons.length === 1 ? comparisonJson(comparisons[0]) : comparisons.map(comparisonJson), opts.pretty)}\n`);
      else io.stdout(`${comparisons.map(formatComparison).join('\n\n')}\n`);
      const cases = comparisons.flatMap((c) => compareGateCases(c, gates).map((g) => (comparisons.length > 1 ? { ...g, name: `${printable(c.next.file)}: ${g.name}` } : g)));
      const figures = [...new Set(comparisons.flatMap((c) => c.figures.map((f) => f.figure)))];
      const report = {
        title: `respbench compare: NEW as % of BASE (${printable(baseFile)})`,
        classname: 'respbench.compare',
        gates: opts.failIf ?? 'none',
        cases,
        columns: figures.map((f) => ({ figure: f, label: `${figureLabel(f)} NEW/BASE`, show: (v: number) => `${v.toFixed(1)}%` })),
        startedUnixMs: Date.now(),
      };
      if (finishGates(io.stderr, report, opts)) throw new Exit(EXIT.gateMissed);
    });
}

/** `ops/s`, `p99 us`: a figure as a column header says it. */
export function figureLabel(figure: string): string {
  return figure === 'ops' ? 'ops/s' : `${figure} us`;
}

function number(v: number): string {
  return Math.abs(v) >= 1000 ? v.toFixed(0) : Math.abs(v) >= 10 ? v.toFixed(1) : v.toFixed(3);
}

function percent(v: number | null): string {
  return v === null ? 'n/a' : `${v.toFixed(1)}%`;
}

/** The comparison as a table: the two files named, what the ratio is, the noise test, a row per figure. */
export function formatComparison(c: Comparison): string {
  const head = ['row', 'figure', 'BASE', 'NEW', 'NEW/BASE', `${c.noise.startsWith('none') ? '' : '95% interval'}`, 'verdict'];
  const cells = c.figures.map((f) => [printable(f.row), figureLabel(f.figure), number(f.base), number(f.next), percent(f.percent), f.interval ? `${f.interval[0].toFixed(1)}-${f.interval[1].toFixed(1)}%` : '', f.verdict]);
  const widths = head.map((h, i) => Math.max(h.length, ...cells.map((row) => row[i].length)));
  const line = (row: string[]) => row.map((v, i) => (i < 2 ? v.padEnd(widths[i]) : v.padStart(widths[i]))).join('  ').trimEnd();
  return [
    `BASE = ${printable(c.base.file)} (${c.base.summary})`,
    `NEW  = ${printable(c.next.file)} (${c.next.summary})`,
    `ratios: NEW as a percentage of BASE; noise: ${c.noise}`,
    '',
    line(head),
    ...cells.map(line),
  ].join('\n');
}

/** The comparison for --json: the files, the ratio's direction, the noise test, the figures. */
export function comparisonJson(c: Comparison): unknown {
  return {
    kind: 'comparison',
    version: 1,
    base: { file: c.base.file, summary: c.base.summary },
    new: { file: c.next.file, summary: c.next.summary },
    ratio: 'NEW as a percentage of BASE',
    noise: c.noise,
    warnings: c.warnings,
    figures: c.figures.map((f) => ({ row: f.row, figure: f.figure, base: f.base, new: f.next, percent: f.percent, interval: f.interval, verdict: f.verdict })),
  };
}
