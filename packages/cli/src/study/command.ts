/**
 * `respbench study <file>`: scenarios × modes × rounds from a YAML or JSON
 * file, with every run flag settable in the file and overridable on the
 * command line (`--rounds 1 --requests 100000 --engine js` tries a study
 * small), writing detail and summary CSVs, Markdown and HTML into --out and
 * printing the Markdown tables at the end.
 */
import { Command } from 'commander';
import type { CliIo } from '../io.js';
import { addRunOptions } from '../run-options.js';
import { addTelemetryOptions, runWithTelemetry, type TelemetryFlags } from '../metrics/session.js';
import { MODES } from '../validate.js';
import { DEFAULT_MODES, studyRunFlags, type StudyOptions } from './flags.js';

// The study itself (its file's parser, the runner, the reports) is loaded
// when a study runs: a plain run does not pay for it at start-up.

const STUDY_HELP = `
Examples:
  respbench study my.yaml
  respbench study my.yaml --rounds 1 --requests 100000 --engine js   try it small first
  respbench study my.yaml --lang zh --out results/                   zh headers (场景, 模式, 均值QPS, …)
  respbench study my.yaml --only 'aof_*' --only none                 re-run part of a study

Run flags given here override the file's (defaults < group < scenario < command line).
Targets: { redis: none | rdb_default | aof_no | aof_everysec | aof_always },
{ address: 'HOST:PORT' }, { uri: 'redis://…' }, { command: '... --port {port}' }, { embedded: true };
all but embedded take user:, pass:, dbnum: (a redis preset then starts with that password).
Writes <out>/<name>_detail_<ts>.csv (a row per finished run), <name>_series_<ts>.csv
(a row per run per interval), <name>_summary_<ts>.csv, <name>_<ts>.md and
<name>_<ts>.html (every few seconds and at the end); <ts>_2, _3,
... when a study of the same name started in the same second. A started server's
output goes to <out>/<name>_<ts>_<scenario>.log, kept when something went wrong.
File format and examples: see the README.

Exit status: 0 every run clean; 1 a run failed or a target did not start;
2 bad study file or flags; 3 error replies; 4 reads did not verify; 130/143/129
interrupted (SIGINT/SIGTERM/SIGHUP).
`;

export function registerStudyCommand(program: Command, io: CliIo): void {
  const cmd = program
    .command('study')
    .argument('<file>', 'study file (YAML or JSON); the format: see the README')
    .description('run a study: scenarios x modes x rounds, with CSV, Markdown and HTML reports');
  addRunOptions(cmd);
  for (const o of cmd.options) {
    // The targets give the address; showing --host/--port would invite a flag the study refuses.
    if (o.long === '--host' || o.long === '--port' || o.long === '--uri') o.hideHelp();
    else o.helpGroup('Run flags (given here, they override the study file; defaults shown are the built-in ones):');
    // A study runs its file's modes (else set and get), never the single run's default.
    if (o.long === '--mode') {
      o.default(undefined);
      o.description = `run only this mode: ${MODES.join(' | ')} (same as --modes; default: the study's modes, else ${DEFAULT_MODES.join(' and ')})`;
    }
  }
  cmd
    .optionsGroup('Study options:')
    .option('--rounds <n>', 'rounds per scenario and mode (overrides the file)')
    .option('--modes <list>', 'modes to run, e.g. set,get (overrides the file; --mode X is --modes X)')
    .option('--percentiles <list>', "latency percentiles of the CSVs' and tables' columns, e.g. 50,90,99,99.9,99.99 (overrides the file's percentiles:; default: the CSVs p50,p90,p99,p99.9, the HTML table p50,p99,p99.9, the Markdown table none)")
    .option('-o, --out <dir>', 'directory for the CSV, Markdown and HTML files', 'results')
    .option('--lang <lang>', 'en | zh: headers of the tables (zh: 场景, 模式, 均值QPS, ...)', 'en')
    .option('--only <scenario>', 'run only this scenario (a glob: * and ?; repeatable)', (v: string, prev: string[]) => [...prev, v], [] as string[])
    .option('--fail-fast', 'stop at the first run that fails (default: record it and go on)', false)
    .option('-q, --quiet', 'no progress on stderr', false);
  addTelemetryOptions(cmd)
    .addHelpText('after', STUDY_HELP)
    .action(async (file: string, opts: StudyOptions & TelemetryFlags) => {
      const { runStudy } = await import('./run-study.js');
      await runWithTelemetry(opts, io, Boolean(opts.quiet), () => runStudy(file, opts, cmd, io));
    });
}

/** `respbench schema`: the study file's JSON Schema, for editors (`# yaml-language-server: $schema=…`). */
export function registerSchemaCommand(program: Command, io: CliIo): void {
  program
    .command('schema')
    .description("print the JSON Schema of study files, for an editor's YAML language server (# yaml-language-server: $schema=study.schema.json)")
    .action(async () => {
      const { studySchema } = await import('./schema.js');
      io.stdout(`${JSON.stringify(studySchema(studyRunFlags()), null, 2)}\n`);
    });
}
