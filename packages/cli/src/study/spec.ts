/**
 * The study file: YAML or JSON describing groups of scenarios, each with a
 * target, the modes and run flags, run for a number of rounds. Loading checks
 * every key, so a typo is one line naming the file and the line, never a
 * study that silently runs something else.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { isMap, isPair, isScalar, LineCounter, parseDocument, visit, type Document } from 'yaml';
import type { Mode } from '../engine-js/plan.js';
import { MODES, type RawMixCommand } from '../validate.js';
import { parseDurationMs, parseInteger, parsePercentiles, parsePositive } from '../flag-values.js';
import { closest } from '../edit-distance.js';
import { CAPACITY_FIELDS, GROUP_FIELDS, keysOf, MIX_COMMAND_FIELDS, SCENARIO_FIELDS, TOP_FIELDS } from './file-format.js';
import { UsageError } from '../usage-error.js';
import { parseSlo, type Slo } from '../capacity/slo.js';
import { DEFAULT_MODES, type RunFlag } from './flags.js';
import { FileErrors, isPlainObject, type Path } from './file-errors.js';
import { readTarget, TARGET_FORMS, type TargetSpec } from './target-spec.js';

export { DEFAULT_MODES, type RunFlag };

/** Raw flag values as commander would hand them over: strings, booleans for switches, and a mix's commands (`commands`). */
export type RawFlags = Record<string, string | boolean | RawMixCommand[]>;

export interface ScenarioSpec {
  group: string;
  name: string;
  tags: string[];
  target: TargetSpec;
  modes: Mode[];
  /** Flags set by the group and the scenario (the scenario wins); the study's defaults are apart. */
  flags: RawFlags;
  /** Where each of `flags` was set, for error messages. */
  flagPaths: Record<string, (string | number)[]>;
}

export interface GroupSpec {
  title: string;
  scenarios: ScenarioSpec[];
}

export interface StudySpec {
  /** The path as the user gave it (error messages name it so). */
  file: string;
  name: string;
  description?: string;
  rounds: number;
  modes: Mode[];
  baseline?: string;
  /** `cvWarn: 10%`: warn when a scenario's rounds' ops/s vary more than this (a fraction; default 0.1). */
  cvWarn?: number;
  /**
   * `percentiles: [50, 99, 99.99]` (or `'50,99,99.99'`): the latency
   * percentiles of the study's tables and CSVs, as --percentiles; study-wide,
   * since every row of a table has the same columns.
   */
  percentiles?: number[];
  defaults: RawFlags;
  /** Where each of `defaults` was set. */
  defaultPaths: Record<string, (string | number)[]>;
  groups: GroupSpec[];
  /** `mode: capacity`: each round of a scenario and mode is a capacity search within `slo`. */
  capacity?: CapacitySpec;
  /** The line of a value in the file, when the parser knows it. */
  lineOf(at: (string | number)[]): number | undefined;
}

/**
 * A capacity study (`mode: capacity` with `slo:`; `start-rate`,
 * `step-duration` and `precision` as `respbench capacity` takes them, the
 * per-step warmup from the run flag `warmup`).
 */
export interface CapacitySpec {
  /** As written: `p99<=1ms`. */
  sloText: string;
  slo: Slo;
  /** null: a share of a short closed-loop probe, as `respbench capacity`. */
  startRate: number | null;
  stepDurationMs: number;
  /** 0 < precision < 1. */
  precision: number;
}

/** `respbench capacity`'s defaults, which a capacity study shares. */
export const CAPACITY_DEFAULTS = { stepDurationMs: 10_000, precision: 0.05 } as const;

/** The modes of a study that names none. */
const DEFAULT_ROUNDS = 3;
/**
 * A round is a whole run of every scenario and mode, and the reports show
 * each one (a column of the summary CSV, a dot in the HTML): more than this
 * many is a study nobody can read; more samples per round come from more
 * requests or a longer duration.
 */
export const MAX_ROUNDS = 1000;

/** `rounds` (file) or `--rounds` (command line): 1..MAX_ROUNDS, with a reason when it is more. */
export function parseRounds(what: string, raw: unknown): number {
  const text = String(raw).trim();
  if (/^\d+$/.test(text) && Number(text) > MAX_ROUNDS) {
    throw new UsageError(
      `${what} is at most ${MAX_ROUNDS} (got ${text}): a round is a whole run of every scenario and mode, and the reports show each one; for more data per round raise requests or duration`,
    );
  }
  return parseInteger(what, raw, [1, MAX_ROUNDS]);
}
/**
 * Flags a study does not take from its file: the target gives the address,
 * `modes` the mode. (`orphanMixSetting` is the CLI's note of a --weight with
 * no --command before it; the file's `commands:` list has no such thing.)
 */
const NOT_IN_FILE = new Set(['host', 'port', 'mode', 'uri', 'orphanMixSetting', ...TRANSPORT_FLAGS()]);

/** The transport flags: a study's target gives these (`tls: { … }`, `socket: PATH`). */
function TRANSPORT_FLAGS(): string[] {
  return ['socket', 'tls', 'cacert', 'cacertdir', 'cert', 'key', 'insecure', 'sni', 'tlsCiphers', 'tlsCiphersuites'];
}

function describe(at: Path): string {
  return at.map((p) => (typeof p === 'number' ? `[${p}]` : `.${p}`)).join('').replace(/^\./, '') || 'the top level';
}

function kebab(key: string): string {
  return key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
}

/** Reads a YAML or JSON study file; throws UsageError with file and line on anything wrong. */
export function loadStudyFile(file: string, runFlags: RunFlag[]): StudySpec {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new UsageError(`${file}: cannot read the study file (${code === 'ENOENT' ? 'no such file' : (err as Error).message})`);
  }
  const lineCounter = new LineCounter();
  if (/\.json$/i.test(file)) {
    try {
      JSON.parse(text);
    } catch (err) {
      const msg = (err as Error).message;
      const pos = /position (\d+)/.exec(msg);
      const line = pos ? text.slice(0, Number(pos[1])).split('\n').length : undefined;
      throw new UsageError(`${file}${line ? `:${line}` : ''}: invalid JSON: ${msg.replace(/\s*\(line \d+ column \d+\)/, '')}`);
    }
  }
  const doc = parseDocument(text, { lineCounter, prettyErrors: false, uniqueKeys: true });
  if (doc.errors.length > 0) {
    const e = doc.errors[0];
    const line = e.linePos?.[0]?.line ?? (e.pos ? lineCounter.linePos(e.pos[0]).line : undefined);
    const kind = /\.json$/i.test(file) ? 'JSON' : 'YAML';
    throw new UsageError(`${file}${line ? `:${line}` : ''}: invalid ${kind}: ${e.message.split('\n')[0].replace(/ at line \d+, column \d+:?$/, '')}`);
  }
  const lineOf = (at: Path) => locate(doc, lineCounter, at);
  const errors = new FileErrors(file, lineOf);
  let data: unknown;
  try {
    data = doc.toJS();
  } catch (err) {
    // The parser refuses aliases that expand past its limit (a "billion laughs" file): say where they are.
    throw new UsageError(`${file}${aliasLine(doc, lineCounter)}: ${/alias/i.test((err as Error).message) ? 'too many YAML aliases: they expand past the limit (an alias bomb?); write the values out or use fewer *references' : `cannot read it: ${(err as Error).message}`}`);
  }
  return buildSpec(data, file, runFlags, errors, lineOf);
}

/** `:LINE` of the document's first alias (`*name`), or nothing. */
function aliasLine(doc: Document, lines: LineCounter): string {
  let line: number | undefined;
  visit(doc, {
    Alias(_key, node) {
      if (node.range) line = lines.linePos(node.range[0]).line;
      return visit.BREAK;
    },
  });
  return line ? `:${line}` : '';
}

/** The line of the node at `at`, or of the nearest ancestor the document has. */
function locate(doc: Document, lines: LineCounter, at: Path): number | undefined {
  for (let n = at.length; n >= 0; n--) {
    const sub = at.slice(0, n);
    const node = sub.length === 0 ? doc.contents : doc.getIn(sub, true);
    // For a key that is there, point at the key itself (a missing value has no range).
    if (n > 0 && typeof sub[n - 1] === 'string') {
      const parent = n === 1 ? doc.contents : doc.getIn(sub.slice(0, -1), true);
      if (isMap(parent)) {
        const pair = parent.items.find((p) => isPair(p) && isScalar(p.key) && p.key.value === sub[n - 1]);
        const range = pair && isScalar(pair.key) ? pair.key.range : undefined;
        if (range) return lines.linePos(range[0]).line;
      }
    }
    const range = (node as { range?: [number, number, number] } | null | undefined)?.range;
    if (range) return lines.linePos(range[0]).line;
  }
  return undefined;
}

/** A capacity study's settings at the top level (as `respbench capacity`'s flags, either spelling). */
// The keys each map takes: file-format.ts declares them (the JSON Schema is made from the same declaration).
const CAPACITY_KEYS = keysOf(CAPACITY_FIELDS);
const TOP_KEYS = keysOf(TOP_FIELDS);
const GROUP_KEYS = keysOf(GROUP_FIELDS);
const SCENARIO_KEYS = keysOf(SCENARIO_FIELDS);

/** Run flags read from one map, with where each was set. */
interface FlagsAt {
  flags: RawFlags;
  paths: Record<string, Path>;
}

/**
 * The run flags a study file takes, by every name it takes them under
 * (commander's camelCase and the kebab-case of the command line): the
 * reader's and the JSON Schema's (schema.ts) list.
 */
export function fileRunFlags(runFlags: RunFlag[]): Map<string, RunFlag> {
  const byName = new Map<string, RunFlag>();
  for (const f of runFlags) {
    if (NOT_IN_FILE.has(f.key)) continue;
    byName.set(f.key, f);
    byName.set(kebab(f.key), f);
  }
  return byName;
}

/** Reads the parts of a study file, each check naming the file and line of what it refuses. */
class SpecReader {
  private readonly flagByName: Map<string, RunFlag>;
  private readonly flagNames: string[];
  /** Scenario names seen so far: they must be unique in a study. */
  readonly names = new Set<string>();

  constructor(
    readonly file: string,
    runFlags: RunFlag[],
    readonly errors: FileErrors,
  ) {
    this.flagByName = fileRunFlags(runFlags);
    this.flagNames = [...new Set(runFlags.filter((f) => !NOT_IN_FILE.has(f.key)).map((f) => f.key))];
  }

  checkKeys(obj: Record<string, unknown>, at: Path, allowed: string[], withFlags: boolean, what: string): void {
    for (const key of Object.keys(obj)) {
      if (allowed.includes(key) || (withFlags && this.flagByName.has(key))) continue;
      if (withFlags && NOT_IN_FILE.has(key)) {
        const why =
          key === 'mode'
            ? 'use modes: [set, get]'
            : TRANSPORT_FLAGS().includes(key)
              ? "the target gives it: target: { address: 'HOST:PORT', tls: { cacert: FILE } } or { socket: PATH }"
              : "the target gives the address: target: { address: 'HOST:PORT' } or { uri: 'redis://…' }";
        throw this.errors.at([...at, key], `${key} cannot be set in a study file (${why})`);
      }
      if (withFlags && key === 'percentiles') {
        throw this.errors.at([...at, key], 'percentiles is set for the whole study (every row of a table has the same columns): put it at the top level of the file, or give --percentiles');
      }
      const known = withFlags ? [...allowed, ...this.flagNames] : allowed;
      const near = closest(key, [...known, ...(withFlags ? [...this.flagByName.keys()] : [])]);
      const hint = near ? `did you mean "${near}"? ` : '';
      throw this.errors.at([...at, key], `unknown key "${key}" in ${what} (${hint}known: ${known.join(', ')})`);
    }
  }

  /** Run flags among obj's keys, normalised to commander's attribute names and raw string values, added to `into`. */
  readFlags(obj: Record<string, unknown>, at: Path, into: FlagsAt): void {
    for (const [key, value] of Object.entries(obj)) {
      const f = this.flagByName.get(key);
      if (!f) continue;
      const here = [...at, key];
      if (f.key === 'commands') {
        into.flags.commands = this.readCommands(value, here);
      } else if (!f.takesValue) {
        if (typeof value !== 'boolean') throw this.errors.at(here, `${key} must be true or false (got ${JSON.stringify(value)})`);
        into.flags[f.key] = value;
      } else {
        if (typeof value !== 'string' && typeof value !== 'number') {
          throw this.errors.at(here, `${key} must be a value like ${f.flag} takes (got ${JSON.stringify(value)})`);
        }
        into.flags[f.key] = String(value);
      }
      into.paths[f.key] = here;
    }
  }

  /**
   * `commands:` a weighted mix, a list of `{ command: TEMPLATE, weight: N,
   * keyPattern: PATTERN }` (weight and keyPattern optional) or of bare
   * templates; the values are checked as --command/--weight take them.
   */
  readCommands(value: unknown, at: Path): RawMixCommand[] {
    const form = "commands must be a list of { command: 'GET __key__', weight: 80, keyPattern: zipf } (weight and keyPattern optional)";
    if (!Array.isArray(value) || value.length === 0) throw this.errors.at(at, form);
    return value.map((c: unknown, i: number) => {
      const here = [...at, i];
      if (typeof c === 'string') return { template: c };
      if (!isPlainObject(c)) throw this.errors.at(here, form);
      this.checkKeys(c, here, keysOf(MIX_COMMAND_FIELDS), false, `commands[${i}]`);
      if (c.command === undefined) throw this.errors.at(here, `commands[${i}]: command is missing (${form})`);
      const text = (v: unknown, key: string) => {
        if (typeof v !== 'string' && typeof v !== 'number') throw this.errors.at([...here, key], `commands[${i}].${key} must be text or a number (got ${JSON.stringify(v)})`);
        return String(v);
      };
      return {
        template: text(c.command, 'command'),
        ...(c.weight === undefined ? {} : { weight: text(c.weight, 'weight') }),
        ...(c.keyPattern === undefined ? {} : { keyPattern: text(c.keyPattern, 'keyPattern') }),
      };
    });
  }

  readModes(value: unknown, at: Path): Mode[] {
    const list = typeof value === 'string' ? value.split(',').map((s) => s.trim()) : value;
    if (!Array.isArray(list) || list.length === 0) throw this.errors.at(at, `modes must be a list of ${MODES.join(', ')}, e.g. [set, get]`);
    const out: Mode[] = [];
    for (const m of list) {
      if (!MODES.includes(m as Mode)) throw this.errors.at(at, `modes: unknown mode ${JSON.stringify(m)} (known: ${MODES.join(', ')})`);
      if (!out.includes(m as Mode)) out.push(m as Mode);
    }
    return out;
  }

  readString(value: unknown, at: Path, what: string): string {
    if (typeof value !== 'string' && typeof value !== 'number') throw this.errors.at(at, `${what} must be text (got ${JSON.stringify(value)})`);
    const s = String(value).trim();
    if (s.length === 0) throw this.errors.at(at, `${what} must not be empty`);
    return s;
  }

  /** The study's name (it names the output files): given, or the file's name. */
  readName(data: Record<string, unknown>): string {
    const base = path.basename(this.file).replace(/\.(ya?ml|json)$/i, '');
    const name = data.name === undefined ? base.replace(/[^\w.-]+/g, '_') || 'study' : this.readString(data.name, ['name'], 'name');
    if (!/^[\w.-]+$/.test(name)) throw this.errors.at(['name'], `name must be letters, digits, ".", "_" or "-" (it names the output files; got ${JSON.stringify(name)})`);
    return name;
  }

  readRounds(value: unknown): number {
    if (value === undefined) return DEFAULT_ROUNDS;
    try {
      return parseRounds('rounds', value);
    } catch (err) {
      throw this.errors.at(['rounds'], (err as Error).message);
    }
  }

  readDefaults(value: unknown): FlagsAt {
    const out: FlagsAt = { flags: {}, paths: {} };
    if (value === undefined) return out;
    if (!isPlainObject(value)) throw this.errors.at(['defaults'], 'defaults must be a map of run flags, e.g. { requests: 1000000, pipeline: 128 }');
    this.checkKeys(value, ['defaults'], [], true, 'defaults');
    this.readFlags(value, ['defaults'], out);
    return out;
  }

  /** `groups`, or the top-level `scenarios` as one group titled with the study's name. */
  groupList(data: Record<string, unknown>, name: string): { value: unknown; at: Path }[] {
    if (data.groups !== undefined && data.scenarios !== undefined) throw this.errors.at(['scenarios'], 'give either groups or scenarios, not both');
    if (data.groups !== undefined) {
      if (!Array.isArray(data.groups) || data.groups.length === 0) throw this.errors.at(['groups'], 'groups must be a non-empty list of { title, scenarios }');
      return data.groups.map((value, i) => ({ value, at: ['groups', i] }));
    }
    if (data.scenarios !== undefined) return [{ value: { title: name, scenarios: data.scenarios }, at: [] }];
    throw this.errors.at([], 'the study has no groups (or scenarios): nothing to run');
  }

  /** `at` is empty for the implicit group of top-level scenarios (which has no keys of its own to check). */
  readGroup(g: unknown, at: Path, studyModes: Mode[]): GroupSpec {
    if (!isPlainObject(g)) throw this.errors.at(at, 'a group is a map { title, scenarios }');
    const explicit = at.length > 0;
    if (explicit) this.checkKeys(g, at, GROUP_KEYS, true, `group ${describe(at)}`);
    const title = g.title === undefined ? `group ${Number(at[1]) + 1}` : this.readString(g.title, [...at, 'title'], 'title');
    const groupFlags: FlagsAt = { flags: {}, paths: {} };
    if (explicit) this.readFlags(g, at, groupFlags);
    const group: GroupContext = {
      title,
      at,
      flags: groupFlags,
      modes: g.modes === undefined ? studyModes : this.readModes(g.modes, [...at, 'modes']),
      target: g.target,
    };
    const scenariosAt: Path = [...at, 'scenarios'];
    if (!Array.isArray(g.scenarios) || g.scenarios.length === 0) throw this.errors.at(scenariosAt, `group "${title}": scenarios must be a non-empty list`);
    const scenarios = g.scenarios.map((s: unknown, i: number) => this.readScenario(s, [...scenariosAt, i], group));
    return { title, scenarios };
  }

  readScenario(s: unknown, at: Path, group: GroupContext): ScenarioSpec {
    if (!isPlainObject(s)) throw this.errors.at(at, 'a scenario is a map { name, tags, target, ... }');
    this.checkKeys(s, at, SCENARIO_KEYS, true, `scenario ${describe(at)}`);
    const name = this.readString(s.name, [...at, 'name'], 'scenario name');
    if (this.names.has(name)) throw this.errors.at([...at, 'name'], `scenario name "${name}" is used twice (names must be unique in a study)`);
    this.names.add(name);
    let tags: string[] = [];
    if (s.tags !== undefined) {
      const list = Array.isArray(s.tags) ? s.tags : [s.tags];
      tags = list.map((t, j) => this.readString(t, [...at, 'tags', j], 'a tag'));
    }
    // The scenario's own flags win over its group's.
    const own: FlagsAt = { flags: { ...group.flags.flags }, paths: { ...group.flags.paths } };
    this.readFlags(s, at, own);
    const targetValue = s.target ?? group.target;
    if (targetValue === undefined) throw this.errors.at(at, `scenario "${name}": target is missing (${TARGET_FORMS})`);
    const targetAt = s.target !== undefined ? [...at, 'target'] : [...group.at, 'target'];
    return {
      group: group.title,
      name,
      tags,
      target: readTarget(targetValue, targetAt, this.errors, path.dirname(path.resolve(this.file))),
      modes: s.modes === undefined ? group.modes : this.readModes(s.modes, [...at, 'modes']),
      flags: own.flags,
      flagPaths: own.paths,
    };
  }

  /** `cvWarn: 10%` (or 10): a percentage above 0 → a fraction. */
  readCvWarn(value: unknown): number | undefined {
    if (value === undefined) return undefined;
    const m = /^\s*(\d+(?:\.\d+)?)\s*%?\s*$/.exec(String(value));
    const pct = m ? Number(m[1]) : NaN;
    if (!(pct > 0 && pct <= 1000)) throw this.errors.at(['cvWarn'], `cvWarn must be a percentage above 0, e.g. 10% (warn when a scenario's rounds' ops/s vary more than that), got ${JSON.stringify(value)}`);
    return pct / 100;
  }

  /** `percentiles: [50, 99.99]` or `'50,99.99'`: as --percentiles. */
  readPercentiles(value: unknown): number[] | undefined {
    if (value === undefined) return undefined;
    const list = Array.isArray(value) ? value : [value];
    if (list.length === 0 || !list.every((v) => typeof v === 'number' || typeof v === 'string')) {
      throw this.errors.at(['percentiles'], `percentiles must be a list of numbers, e.g. [50, 90, 99, 99.9, 99.99] (got ${JSON.stringify(value)})`);
    }
    try {
      return parsePercentiles(list.map(String).join(','));
    } catch (err) {
      throw this.errors.at(['percentiles'], (err as Error).message.replace(/^--percentiles/, 'percentiles'));
    }
  }

  /** `mode: capacity` and its settings; undefined for a study of runs (where the settings are refused). */
  readCapacity(data: Record<string, unknown>): CapacitySpec | undefined {
    const given = CAPACITY_KEYS.filter((k) => data[k] !== undefined);
    if (data.mode === undefined) {
      if (given.length > 0) throw this.errors.at([given[0]], `${given[0]} belongs to a capacity study: add mode: capacity (or remove ${given[0]})`);
      return undefined;
    }
    if (data.mode !== 'capacity') {
      throw this.errors.at(['mode'], `mode must be capacity (a study of capacity searches; got ${JSON.stringify(data.mode)}): the workload modes go in modes: [set, get]`);
    }
    if (data.slo === undefined) throw this.errors.at(['mode'], "mode: capacity needs slo:, e.g. slo: 'p99<=1ms'");
    const one = (a: string, b: string) => {
      if (data[a] !== undefined && data[b] !== undefined) throw this.errors.at([b], `give ${a} or ${b}, not both`);
      return data[a] !== undefined ? { value: data[a], at: [a] } : data[b] !== undefined ? { value: data[b], at: [b] } : null;
    };
    const placed = <T>(at: Path, read: () => T): T => {
      try {
        return read();
      } catch (err) {
        throw this.errors.at(at, (err as Error).message);
      }
    };
    const sloText = this.readString(data.slo, ['slo'], 'slo');
    const start = one('start-rate', 'startRate');
    const step = one('step-duration', 'stepDuration');
    let precision: number = CAPACITY_DEFAULTS.precision;
    if (data.precision !== undefined) {
      const text = String(data.precision).trim().replace(/%$/, '');
      precision = placed(['precision'], () => parsePositive('precision (in %)', text, 99)) / 100;
    }
    return {
      sloText,
      slo: placed(['slo'], () => parseSlo(sloText, 'slo')),
      startRate: start ? placed(start.at, () => parsePositive(String(start.at[0]), start.value, 100_000_000)) : null,
      stepDurationMs: step ? placed(step.at, () => parseDurationMs(String(step.at[0]), step.value, false)) : CAPACITY_DEFAULTS.stepDurationMs,
      precision,
    };
  }

  readBaseline(value: unknown): string | undefined {
    if (value === undefined) return undefined;
    const baseline = this.readString(value, ['baseline'], 'baseline');
    if (!this.names.has(baseline)) throw this.errors.at(['baseline'], `baseline "${baseline}" is not a scenario of this study (scenarios: ${[...this.names].join(', ')})`);
    return baseline;
  }
}

/** What a group hands down to its scenarios. */
interface GroupContext {
  title: string;
  at: Path;
  flags: FlagsAt;
  modes: Mode[];
  target: unknown;
}

function buildSpec(data: unknown, file: string, runFlags: RunFlag[], errors: FileErrors, lineOf: (at: Path) => number | undefined): StudySpec {
  if (!isPlainObject(data)) throw errors.at([], 'a study file is a map with groups (or scenarios); the format: see the README');
  const reader = new SpecReader(file, runFlags, errors);
  reader.checkKeys(data, [], TOP_KEYS, false, 'the study');
  const name = reader.readName(data);
  const rounds = reader.readRounds(data.rounds);
  const modes = data.modes === undefined ? [...DEFAULT_MODES] : reader.readModes(data.modes, ['modes']);
  const defaults = reader.readDefaults(data.defaults);
  const groups = reader.groupList(data, name).map(({ value, at }) => reader.readGroup(value, at, modes));
  // A mix replaces the mode: its runs would be the same under every mode but labelled apart.
  for (const s of groups.flatMap((g) => g.scenarios)) {
    const at = s.flagPaths.commands ?? defaults.paths.commands;
    if (at && s.modes.some((m) => m !== 'mixed')) {
      throw errors.at(at, `scenario "${s.name}": commands (a mix) replace the mode, so its modes must be [mixed] (got ${s.modes.join(', ')})`);
    }
  }
  const capacity = reader.readCapacity(data);
  return {
    ...(capacity ? { capacity } : {}),
    file,
    name,
    description: typeof data.description === 'string' ? data.description : undefined,
    rounds,
    modes,
    baseline: reader.readBaseline(data.baseline),
    cvWarn: reader.readCvWarn(data.cvWarn),
    percentiles: reader.readPercentiles(data.percentiles),
    defaults: defaults.flags,
    defaultPaths: defaults.paths,
    groups,
    lineOf,
  };
}
