/**
 * `respbench merge`'s flags. The merge itself (merge.ts, its worker and
 * readers) loads when the subcommand runs: a run parses none of it.
 */
import type { Command } from 'commander';
import { checkWritableFile } from './files.js';
import type { CliIo } from './io.js';
import type { MergeFlags } from './merge.js';

export function registerMergeCommand(program: Command, io: CliIo, argv: readonly string[] = []): void {
  program
    .command('merge')
    .description('add up the --json results of several load machines (--client-index/--client-count) into one')
    .argument('<results...>', 'the machines\' --json files')
    .option('--json', 'print the merged result as JSON (one line; --pretty indents it)', false)
    .option('--pretty', 'with --json or --json-file: indented JSON', false)
    .option('--json-file <path>', 'also write the merged result as JSON to this file, whole')
    .option('--html <file>', 'also write the merged result as an HTML page (figures per command, throughput and p50/p99 over time)')
    .option('--hdr-log <prefix>', 'write the merged run\'s HdrHistogram interval logs, as a single run\'s --hdr-log does')
    .action(async (files: string[], opts: MergeFlags) => {
      if (opts.html !== undefined) (await import('./html-report.js')).checkHtmlTarget(opts.html);
      if (opts.jsonFile !== undefined) checkWritableFile('--json-file', opts.jsonFile);
      if (opts.hdrLog !== undefined) (await import('./hdr-log.js')).checkHdrLogPrefix(opts.hdrLog);
      const { mergeAwayFromSignals } = await import('./merge.js');
      await mergeAwayFromSignals(files, opts, io, argv);
    });
}
