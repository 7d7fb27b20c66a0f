/**
 * A study run: the study file read and checked against the command line,
 * the scenarios picked (--only), the runner started with its progress and
 * interrupts, and the reports written. Loaded by study/command.ts when a
 * study runs.
 */
import { fileTimestamp, type StudyInfo } from '@respbench/report';
import type { Command } from 'commander';
import path from 'node:path';
import { engineForCommand } from '../engines.js';
import { Exit, EXIT } from '../exit.js';
import { onStopSignals } from '../interrupt.js';
import type { CliIo } from '../io.js';
import type { Engine, Mode } from '../engine-js/plan.js';
import { buildPlan, checkCapacityStudyFlags, checkStudyFlags, MODES, type EngineChoice, type RawRunOptions } from '../validate.js';
import { parseChoice, parsePercentiles } from '../flag-values.js';
import { UsageError } from '../usage-error.js';
import { checkOutputDir, MAX_FILE_NAME_BYTES, outputPaths, tooLongFileName, type OutputPaths } from './outputs.js';
import { StudyProgress } from './progress.js';
import { countRuns, sloForPeople, StudyRunner, type StudySetup } from './runner.js';
import { studyRunFlags, type StudyOptions } from './flags.js';
import { loadStudyFile, parseRounds, type RawFlags, type RunFlag, type ScenarioSpec, type StudySpec } from './spec.js';

/** Where a flag that failed validation was set, for a message with file and line. */
function locateFlagError(err: UsageError, spec: StudySpec, s: ScenarioSpec, cli: RawFlags, runFlags: RunFlag[]): UsageError {
  const flag = /--[a-z][a-z-]*/.exec(err.message)?.[0];
  // A mix's --weight and --command-key-pattern are set in the file's commands: list.
  const key = flag === '--weight' || flag === '--command-key-pattern' ? 'commands' : runFlags.find((f) => f.flag === flag)?.key;
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

/** `*` any run of characters, `?` one character, everything else itself. */
export function globToRegExp(glob: string): RegExp {
  const body = [...glob].map((c) => (c === '*' ? '.*' : c === '?' ? '.' : c.replace(/[.+^${}()|[\]\\]/g, '\\$&'))).join('');
  return new RegExp(`^${body}$`);
}

/**
 * The scenarios `--only` picks, in the study's order; every pattern must
 * pick at least one (a typo should not quietly run nothing or everything).
 */
export function pickScenarios(scenarios: ScenarioSpec[], only: string[], file: string): ScenarioSpec[] {
  if (only.length === 0) return scenarios;
  const patterns = only.map((p) => ({ p, re: globToRegExp(p) }));
  for (const { p, re } of patterns) {
    if (!scenarios.some((s) => re.test(s.name))) {
      throw new UsageError(`--only ${p}: no scenario of ${file} matches (scenarios: ${scenarios.map((s) => s.name).join(', ')})`);
    }
  }
  return scenarios.filter((s) => patterns.some(({ re }) => re.test(s.name)));
}

/** What the study's command line says: run flags (apart from their built-in defaults) and study options. */
interface CommandLine {
  /** Run flags left at their built-in defaults: the study file overrides these. */
  builtin: RawFlags;
  /** Run flags given on the command line: these override the study file. */
  cli: RawFlags;
  lang: 'en' | 'zh';
  rounds: number | undefined;
  modes: Mode[] | null;
}

function readCommandLine(opts: StudyOptions, cmd: Command, runFlags: RunFlag[]): CommandLine {
  const fromCli = (key: string) => cmd.getOptionValueSource(key) === 'cli';
  checkStudyFlags(fromCli);
  const builtin: RawFlags = {};
  const cli: RawFlags = {};
  for (const f of runFlags) {
    if (f.key === 'host' || f.key === 'port' || f.key === 'mode' || f.key === 'uri') continue;
    const v = opts[f.key];
    if (v === undefined) continue;
    if (fromCli(f.key)) cli[f.key] = v as string | boolean;
    else builtin[f.key] = v as string | boolean;
  }
  const lang = parseChoice<'en' | 'zh'>('--lang', opts.lang, ['en', 'zh']);
  const rounds = opts.rounds === undefined ? undefined : parseRounds('--rounds', opts.rounds);
  let modes: Mode[] | null = null;
  if (opts.modes !== undefined) modes = parseModes(opts.modes, '--modes');
  else if (fromCli('mode')) modes = parseModes(String(opts.mode), '--mode');
  return { builtin, cli, lang, rounds, modes };
}

/**
 * Checks every scenario's flags before anything starts (a typo in the last
 * scenario should not cost the hour the first ones take), then loads each
 * engine the scenarios ask for once.
 */
function checkScenarios(spec: StudySpec, scenarios: ScenarioSpec[], setup: Pick<StudySetup, 'modesOf' | 'rawOf'>, line: CommandLine, runFlags: RunFlag[], io: CliIo): (s: ScenarioSpec) => Engine {
  const engineChoices = new Map<ScenarioSpec, EngineChoice>();
  for (const s of scenarios) {
    for (const mode of setup.modesOf(s)) {
      try {
        const { engine } = buildPlan({ ...setup.rawOf(s), host: '127.0.0.1', port: '1', mode } as RawRunOptions);
        engineChoices.set(s, engine);
      } catch (err) {
        if (err instanceof UsageError) throw locateFlagError(err, spec, s, line.cli, runFlags);
        throw err;
      }
    }
  }
  const engines = new Map<EngineChoice, Engine>();
  for (const choice of new Set(engineChoices.values())) engines.set(choice, engineForCommand(choice, io.stderr));
  return (s) => engines.get(engineChoices.get(s)!)!;
}

/** The heading of the reports: what the runs share, the modes in their order, the groups. */
function studyInfo(spec: StudySpec, scenarios: ScenarioSpec[], setup: Pick<StudySetup, 'modesOf' | 'rawOf'>, rounds: number, startedAt: Date, paths: OutputPaths, only: string[]): StudyInfo {
  const { modesOf, rawOf } = setup;
  // What the runs actually use: a value every scenario shares, or "varies".
  const shared = (key: 'requests' | 'pipeline' | 'keyspace' | 'valueSize' | 'connections'): string => {
    const values = new Set(scenarios.map((s) => String((rawOf(s) as unknown as Record<string, unknown>)[key])));
    return values.size === 1 ? [...values][0] : 'varies';
  };
  const c = spec.capacity;
  const parameters = [
    ...(c
      ? [
          `slo=${c.sloText}`,
          `step-duration=${c.stepDurationMs / 1000}s`,
          `precision=${Number((c.precision * 100).toPrecision(4))}%`,
          `start-rate=${c.startRate ?? 'probe'}`,
        ]
      : [`requests=${shared('requests')}`]),
    `pipeline=${shared('pipeline')}`,
    `keyspace=${shared('keyspace')}`,
    `value-size=${shared('valueSize')}`,
    `connections=${shared('connections')}`,
  ].join(' ');
  const allModes: Mode[] = [];
  for (const m of [...spec.modes, ...scenarios.flatMap(modesOf)]) if (!allModes.includes(m) && scenarios.some((s) => modesOf(s).includes(m))) allModes.push(m);
  return {
    name: spec.name,
    startedAt,
    rounds,
    modes: allModes,
    groups: spec.groups
      .map((g) => ({ title: g.title, scenarios: g.scenarios.filter((s) => scenarios.includes(s)).map((s) => ({ name: s.name, tags: s.tags })) }))
      .filter((g) => g.scenarios.length > 0),
    // A part run without its baseline has nothing to divide by: no ratio column rather than an empty one.
    baseline: spec.baseline !== undefined && scenarios.some((s) => s.name === spec.baseline) ? spec.baseline : undefined,
    parameters,
    cvWarn: spec.cvWarn,
    // The reports live in --out beside the CSVs: name them relative to it, never by this machine's absolute path.
    files: {
      detail: path.relative(path.dirname(paths.markdown), paths.detail),
      summary: path.relative(path.dirname(paths.markdown), paths.summary),
      series: path.relative(path.dirname(paths.markdown), paths.series),
    },
    only: only.length > 0 ? scenarios.map((s) => s.name) : undefined,
    ...(c ? { capacity: { slo: sloForPeople(c.slo) } } : {}),
  };
}

/** Where the study file sets `key` for a scenario (or in its defaults), as "FILE:LINE"; undefined where it does not. */
function fileLineOf(spec: StudySpec, scenarios: ScenarioSpec[], key: string): string | undefined {
  for (const s of scenarios) {
    const at = s.flagPaths[key] ?? spec.defaultPaths[key];
    if (at) {
      const l = spec.lineOf(at);
      return `${spec.file}${l ? `:${l}` : ''}`;
    }
  }
  return undefined;
}

/**
 * The first SIGINT/SIGTERM/SIGHUP stops the study in order; a second one
 * kills the current server rather than waiting for it to stop, and the study
 * still writes its files and prints its tables before it exits.
 */
async function runInterruptible(runner: StudyRunner, progress: StudyProgress, io: CliIo): ReturnType<StudyRunner['run']> {
  const stopListening = onStopSignals((sig, n) => {
    progress.clear();
    if (n === 1) {
      io.stderr(`respbench: ${sig}: stopping the study (finished rounds are kept; stopping servers)\n`);
      runner.interrupt(sig);
    } else {
      io.stderr(`respbench: ${sig} again: killing the servers now; the finished rounds are still written\n`);
      runner.killNow();
    }
  });
  try {
    return await runner.run();
  } finally {
    stopListening();
  }
}

export async function runStudy(file: string, opts: StudyOptions, cmd: Command, io: CliIo): Promise<void> {
  const runFlags = studyRunFlags();
  const line = readCommandLine(opts, cmd, runFlags);
  const spec = loadStudyFile(file, runFlags);
  // Study-wide, as the rounds: every row of a table has the same columns.
  const percentiles = opts.percentiles !== undefined ? parsePercentiles(opts.percentiles) : spec.percentiles;
  const rounds = line.rounds ?? spec.rounds;
  const scenarios = pickScenarios(
    spec.groups.flatMap((g) => g.scenarios),
    opts.only,
    file,
  );
  const setup = {
    rawOf: (s: ScenarioSpec) => ({ ...line.builtin, ...spec.defaults, ...s.flags, ...line.cli }) as unknown as Omit<RawRunOptions, 'host' | 'port' | 'mode'>,
    modesOf: (s: ScenarioSpec) => line.modes ?? s.modes,
  };
  if (spec.capacity) checkCapacityStudyFlags((key) => key in line.cli, (key) => fileLineOf(spec, scenarios, key));
  const engineOf = checkScenarios(spec, scenarios, setup, line, runFlags, io);

  // A read-only or missing --out is found now, not after the first hour of runs.
  checkOutputDir(opts.out);
  const startedAt = new Date();
  const paths = outputPaths(opts.out, spec.name, fileTimestamp(startedAt));
  const tooLong = tooLongFileName(paths, scenarios.filter((s) => s.target.kind !== 'address').map((s) => s.name));
  if (tooLong) {
    throw new UsageError(
      `${file}: the study's name (${Buffer.byteLength(spec.name)} bytes) and its scenarios' names make a file name too long to write: ${tooLong.name} is ${tooLong.bytes} bytes with its temp suffix, a file name holds ${MAX_FILE_NAME_BYTES}: give the study (or its scenarios) shorter names`,
    );
  }
  const info = { ...studyInfo(spec, scenarios, setup, rounds, startedAt, paths, opts.only), ...(percentiles ? { percentiles } : {}) };
  if (spec.baseline !== undefined && info.baseline === undefined) {
    io.stderr(`respbench: the baseline "${spec.baseline}" is not among --only's scenarios: the reports have no ratio column\n`);
  }
  const runsPlanned = countRuns({ scenarios, rounds, modesOf: setup.modesOf });
  const progress = new StudyProgress(io, runsPlanned, !opts.quiet && io.stderrIsTty, !opts.quiet);
  const runner = new StudyRunner({ scenarios, rounds, ...setup, engineOf, info, paths, lang: line.lang, failFast: opts.failFast, capacity: spec.capacity }, io, progress);
  progress.note(`respbench study ${spec.name}: ${scenarios.length} scenario${scenarios.length === 1 ? '' : 's'}, ${runsPlanned} runs, writing ${path.join(opts.out, `${spec.name}_*_${fileTimestamp(startedAt)}.*`)}`);

  const outcome = await runInterruptible(runner, progress, io);
  io.stdout(outcome.markdown);
  const unwritten = new Set(outcome.unwritten.map((u) => u.file));
  for (const file of [paths.detail, paths.series, paths.summary, paths.markdown, paths.html]) {
    io.stderr(unwritten.has(file) ? `NOT written: ${file}\n` : `wrote ${file}\n`);
  }
  // Files the study could not write are a failure, unless a signal stopped it (its status says so).
  const code = unwritten.size > 0 && outcome.stopped !== 'SIGINT' && outcome.stopped !== 'SIGTERM' && outcome.stopped !== 'SIGHUP' ? EXIT.failed : outcome.exitCode;
  if (code !== EXIT.ok) throw new Exit(code);
}
