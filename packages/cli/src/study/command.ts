/**
 * `respbench study <file>`: scenarios × modes × rounds from a YAML or JSON
 * file, with every run flag settable in the file and overridable on the
 * command line (`--rounds 1 --requests 100000 --engine js` tries a study
 * small), writing detail and summary CSVs, Markdown and HTML into --out and
 * printing the Markdown tables at the end.
 */
import { fileTimestamp, type StudyInfo } from '@respbench/report';
import { Command } from 'commander';
import path from 'node:path';
import { addRunOptions, Exit } from '../cli.js';
import { EngineUnavailableError, selectEngine } from '../engines.js';
import type { Engine, Mode } from '../engine-js/plan.js';
import { EXIT } from '../run.js';
import { buildPlan, parseChoice, parseInteger, UsageError, type EngineChoice, type RawRunOptions } from '../validate.js';
import { outputPaths } from './outputs.js';
import { StudyProgress } from './progress.js';
import { StudyRunner } from './runner.js';
import { loadStudyFile, MODES, ROUNDS_LIMIT, type RawFlags, type RunFlag, type ScenarioSpec, type StudySpec } from './spec.js';

interface StudyIo {
  stdout: (t: string) => void;
  stderr: (t: string) => void;
  stderrIsTty?: boolean;
}

interface StudyOptions {
  rounds?: string;
  modes?: string;
  out: string;
  lang: string;
  failFast: boolean;
  quiet: boolean;
  [flag: string]: unknown;
}

const STUDY_HELP = `
Examples:
  respbench study examples/redis-persistence.yaml
  respbench study examples/redis-persistence.yaml --rounds 1 --requests 100000 --engine js   try it small first
  respbench study my.yaml --lang zh --out results/                                             zh headers (场景, 模式, 均值QPS, …)

Run flags given here override the file's (defaults < group < scenario < command line).
Targets: { redis: none | rdb_default | aof_no | aof_everysec | aof_always },
{ address: 'HOST:PORT' }, { command: '... --port {port}' }, { embedded: true }.
Writes <out>/<name>_detail_<ts>.csv, <name>_summary_<ts>.csv, <name>_<ts>.md and
<name>_<ts>.html after every finished run. Format: docs/study.md.

Exit status: 0 every run clean; 1 a run failed or a target did not start;
2 bad study file or flags; 3 error replies; 4 reads did not verify; 130/143 interrupted.
`;

/** The run flags a study file may set: the options addRunOptions gives a command. */
export function studyRunFlags(): RunFlag[] {
  return addRunOptions(new Command()).options.map((o) => ({
    key: o.attributeName(),
    flag: o.long ?? o.flags,
    takesValue: o.required || o.optional,
    negate: o.negate,
  }));
}

export function registerStudyCommand(program: Command, io: StudyIo): void {
  const cmd = program
    .command('study')
    .argument('<file>', 'study file (YAML or JSON), see docs/study.md')
    .description('run a study: scenarios x modes x rounds, with CSV, Markdown and HTML reports');
  addRunOptions(cmd);
  for (const o of cmd.options) {
    // The targets give the address; showing --host/--port would invite a flag the study refuses.
    if (o.long === '--host' || o.long === '--port') o.hideHelp();
    else o.helpGroup('Run flags (given here, they override the study file; defaults shown are the built-in ones):');
  }
  cmd
    .optionsGroup('Study options:')
    .option('--rounds <n>', 'rounds per scenario and mode (overrides the file)')
    .option('--modes <list>', 'modes to run, e.g. set,get (overrides the file; --mode X is --modes X)')
    .option('-o, --out <dir>', 'directory for the CSV, Markdown and HTML files', 'results')
    .option('--lang <lang>', 'en | zh: headers of the tables (zh: 场景, 模式, 均值QPS, ...)', 'en')
    .option('--fail-fast', 'stop at the first run that fails (default: record it and go on)', false)
    .option('-q, --quiet', 'no progress on stderr', false)
    .addHelpText('after', STUDY_HELP)
    .action(async (file: string, opts: StudyOptions) => {
      await runStudy(file, opts, cmd, io);
    });
}

/** Where a flag that failed validation was set, for a message with file and line. */
function locateFlagError(err: UsageError, spec: StudySpec, s: ScenarioSpec, cli: RawFlags, runFlags: RunFlag[]): UsageError {
  const flag = /--[a-z][a-z-]*/.exec(err.message)?.[0];
  const key = runFlags.find((f) => f.flag === flag)?.key;
  if (key && key in cli) return new UsageError(`${err.message} (from the command line)`);
  const at = (key && (s.flagPaths[key] ?? spec.defaultPaths[key])) || undefined;
  const line = at ? spec.lineOf(at) : undefined;
  return new UsageError(`${spec.file}${line ? `:${line}` : ''}: scenario "${s.name}": ${err.message}`);
}

function parseModes(raw: string, flag: string): Mode[] {
  const list = raw.split(',').map((m) => m.trim()).filter(Boolean);
  if (list.length === 0) throw new UsageError(`${flag} must list modes, e.g. set,get`);
  return [...new Set(list.map((m) => parseChoice<Mode>(flag, m, MODES)))];
}

async function runStudy(file: string, opts: StudyOptions, cmd: Command, io: StudyIo): Promise<void> {
  const runFlags = studyRunFlags();
  const fromCli = (key: string) => cmd.getOptionValueSource(key) === 'cli';
  for (const key of ['host', 'port']) {
    if (fromCli(key)) throw new UsageError(`--${key} does not apply to a study: each scenario's target gives the address (target: { address: 'HOST:PORT' })`);
  }
  const builtin: RawFlags = {};
  const cli: RawFlags = {};
  for (const f of runFlags) {
    if (f.key === 'host' || f.key === 'port' || f.key === 'mode') continue;
    const v = opts[f.key];
    if (v === undefined) continue;
    if (fromCli(f.key)) cli[f.key] = v as string | boolean;
    else builtin[f.key] = v as string | boolean;
  }
  const lang = parseChoice<'en' | 'zh'>('--lang', opts.lang, ['en', 'zh']);
  const rounds0 = opts.rounds === undefined ? undefined : parseInteger('--rounds', opts.rounds, ROUNDS_LIMIT);
  let modesOverride: Mode[] | null = null;
  if (opts.modes !== undefined) modesOverride = parseModes(opts.modes, '--modes');
  else if (fromCli('mode')) modesOverride = parseModes(String(opts.mode), '--mode');

  const spec = loadStudyFile(file, runFlags);
  const rounds = rounds0 ?? spec.rounds;
  const scenarios = spec.groups.flatMap((g) => g.scenarios);
  const rawOf = (s: ScenarioSpec) => ({ ...builtin, ...spec.defaults, ...s.flags, ...cli }) as unknown as Omit<RawRunOptions, 'host' | 'port' | 'mode'>;
  const modesOf = (s: ScenarioSpec) => modesOverride ?? s.modes;

  // Check every scenario's flags before anything starts: a typo in the last
  // scenario should not cost the hour the first ones take.
  const engineChoices = new Map<ScenarioSpec, EngineChoice>();
  for (const s of scenarios) {
    for (const mode of modesOf(s)) {
      try {
        const { engine } = buildPlan({ ...rawOf(s), host: '127.0.0.1', port: '1', mode } as RawRunOptions);
        engineChoices.set(s, engine);
      } catch (err) {
        if (err instanceof UsageError) throw locateFlagError(err, spec, s, cli, runFlags);
        throw err;
      }
    }
  }
  const engines = new Map<EngineChoice, Engine>();
  for (const choice of new Set(engineChoices.values())) {
    try {
      const selection = selectEngine(choice);
      if (selection.notice) io.stderr(`${selection.notice}\n`);
      engines.set(choice, selection.engine);
    } catch (err) {
      if (err instanceof EngineUnavailableError) {
        io.stderr(`respbench: ${err.message}\n`);
        throw new Exit(EXIT.failed);
      }
      throw err;
    }
  }

  const startedAt = new Date();
  const paths = outputPaths(opts.out, spec.name, fileTimestamp(startedAt));
  // What the runs actually use: a value every scenario shares, or "varies".
  const shared = (key: 'requests' | 'pipeline' | 'keyspace' | 'valueSize' | 'connections'): string => {
    const values = new Set(scenarios.map((s) => String((rawOf(s) as unknown as Record<string, unknown>)[key])));
    return values.size === 1 ? [...values][0] : 'varies';
  };
  const parameters = [
    `requests=${shared('requests')}`,
    `pipeline=${shared('pipeline')}`,
    `keyspace=${shared('keyspace')}`,
    `value-size=${shared('valueSize')}`,
    `connections=${shared('connections')}`,
  ].join(' ');
  const allModes: Mode[] = [];
  for (const m of [...spec.modes, ...scenarios.flatMap(modesOf)]) if (!allModes.includes(m) && scenarios.some((s) => modesOf(s).includes(m))) allModes.push(m);
  const info: StudyInfo = {
    name: spec.name,
    startedAt,
    rounds,
    modes: allModes,
    groups: spec.groups.map((g) => ({ title: g.title, scenarios: g.scenarios.map((s) => ({ name: s.name, tags: s.tags })) })),
    baseline: spec.baseline,
    parameters,
    files: { detail: paths.detail, summary: paths.summary },
  };

  const runsPlanned = scenarios.reduce((a, s) => a + modesOf(s).length * rounds, 0);
  const progress = new StudyProgress(io, runsPlanned, !opts.quiet && Boolean(io.stderrIsTty), !opts.quiet);
  const runner = new StudyRunner(
    { scenarios, rounds, modesOf, rawOf, engineOf: (s) => engines.get(engineChoices.get(s)!)!, info, paths, lang, failFast: opts.failFast },
    io,
    progress,
  );
  progress.note(`respbench study ${spec.name}: ${scenarios.length} scenario${scenarios.length === 1 ? '' : 's'}, ${runsPlanned} runs, writing ${path.join(opts.out, `${spec.name}_*_${fileTimestamp(startedAt)}.*`)}`);

  let signals = 0;
  const onSignal = (sig: 'SIGINT' | 'SIGTERM') => () => {
    signals++;
    if (signals === 1) {
      progress.clear();
      io.stderr(`respbench: ${sig}: stopping the study (finished rounds are kept; stopping servers)\n`);
      runner.interrupt(sig);
    } else {
      runner.killNow();
      process.exit(sig === 'SIGINT' ? EXIT.sigint : EXIT.sigterm);
    }
  };
  const onInt = onSignal('SIGINT');
  const onTerm = onSignal('SIGTERM');
  process.on('SIGINT', onInt);
  process.on('SIGTERM', onTerm);
  let outcome;
  try {
    outcome = await runner.run();
  } finally {
    process.off('SIGINT', onInt);
    process.off('SIGTERM', onTerm);
  }
  io.stdout(outcome.markdown);
  io.stderr(`wrote ${paths.detail}\nwrote ${paths.summary}\nwrote ${paths.markdown}\nwrote ${paths.html}\n`);
  if (outcome.exitCode !== EXIT.ok) throw new Exit(outcome.exitCode);
}
