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
import { LIMITS } from '../engine-js/limits.js';
import { checkCpus, formatCpuList } from '../cpus.js';
import { MODES, type RawMixCommand } from '../validate.js';
import { checkSocketPath, parseDurationMs, parseHost, parseHostPort, parseInteger, parsePercentiles, parsePositive } from '../flag-values.js';
import { parseUri } from '../uri.js';
import { closest } from '../edit-distance.js';
import { CAPACITY_FIELDS, GROUP_FIELDS, keysOf, MIX_COMMAND_FIELDS, REDIS_CLUSTER_FIELDS, REDIS_PRESETS, SCENARIO_FIELDS, TARGET_FIELDS, TLS_FIELDS, TOP_FIELDS } from './file-format.js';
import { rememberSecret } from '../secrets.js';
import { UsageError } from '../usage-error.js';
import { parseSlo, type Slo } from '../capacity/slo.js';
import { DEFAULT_MODES, type RunFlag } from './flags.js';

export { DEFAULT_MODES, type RunFlag };


/** Raw flag values as commander would hand them over: strings, booleans for switches, and a mix's commands (`commands`). */
export type RawFlags = Record<string, string | boolean | RawMixCommand[]>;

export { REDIS_PRESETS };

export type RedisPreset = keyof typeof REDIS_PRESETS;

/** A target's login and database (`user`, `pass`, `dbnum` keys, or a uri's parts); run flags given win. */
export interface TargetCredentials {
  user: string | null;
  /** A secret: never printed, never written to a report. */
  password: string | null;
  dbnum: number | null;
}

/**
 * A target's TLS settings (`tls: { cacert: … }`), as the run flags take them
 * (--cacert, --tls-ciphers, …); file paths resolved against the study file's
 * folder. `tls: true` is an empty one: the system's roots only.
 */
export interface TargetTls {
  cacert?: string;
  cacertdir?: string;
  cert?: string;
  key?: string;
  insecure?: boolean;
  sni?: string;
  ciphers?: string;
  ciphersuites?: string;
}

export type TargetSpec = (
  /** A server already running: at host:port (over TLS with `tls`), or at a unix socket. */
  | { kind: 'address'; host: string; port: number; socket?: string; tls?: TargetTls; cluster?: boolean }
  /** A command to start; `{port}` in it (or a fixed port) says where it listens. */
  | {
      kind: 'command';
      command: string | string[];
      host: string;
      /** Null: a free port is picked and substituted for `{port}`. */
      port: number | null;
      cwd: string;
      env: Record<string, string>;
      readyTimeoutMs: number;
      stopTimeoutMs: number;
      /** `cpus:`: the server runs on these CPUs (taskset -c). */
      cpus?: number[];
    }
  /** redis-server on a free port in a fresh data directory with a persistence preset. */
  | {
      kind: 'redis';
      preset: RedisPreset;
      binary: string;
      args: string[];
      readyTimeoutMs: number;
      stopTimeoutMs: number;
      /** `tls: true`: served over TLS on a certificate the study makes with openssl. */
      tls?: boolean;
      /** `socket: true`: measured over a unix socket in its data directory. */
      socket?: boolean;
      /** `cpus:`: the server runs on these CPUs (taskset -c). */
      cpus?: number[];
    }
  /** A local Redis Cluster: `primaries` × (1 + `replicas`) redis-servers with a persistence preset, joined by redis-cli --cluster create. */
  | {
      kind: 'redis_cluster';
      primaries: number;
      replicas: number;
      preset: RedisPreset;
      binary: string;
      readyTimeoutMs: number;
      stopTimeoutMs: number;
      /** `tls: true`: every node TLS only (tls-cluster yes), measured with --tls on a CA the study makes. */
      tls?: boolean;
    }
  /** `respbench serve`, the built-in demo server, on a free port. */
  | { kind: 'embedded' }
) & { credentials?: TargetCredentials };

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

type Path = (string | number)[];

class FileErrors {
  constructor(
    readonly file: string,
    private readonly locate: (at: Path) => number | undefined,
  ) {}

  /** A UsageError naming the file, the line (when known) and what is wrong. */
  at(at: Path, message: string): UsageError {
    const line = this.locate(at);
    return new UsageError(`${this.file}${line ? `:${line}` : ''}: ${message}`);
  }
}

function describe(at: Path): string {
  return at.map((p) => (typeof p === 'number' ? `[${p}]` : `.${p}`)).join('').replace(/^\./, '') || 'the top level';
}

function kebab(key: string): string {
  return key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
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

const TARGET_FORMS = "one of { redis: PRESET }, { redis_cluster: { primaries: 3, replicas: 1, persistence: PRESET } }, { address: 'HOST:PORT' } (cluster: true for a cluster seed), { uri: 'redis://…' or 'redis+cluster://…' }, { socket: PATH }, { command: CMD, port: N }, { embedded: true }";
const TARGET_KEYS: Record<string, string[]> = Object.fromEntries(Object.entries(TARGET_FIELDS).map(([kind, fields]) => [kind, keysOf(fields)]));

/** One target map's values, each read with the file and line of a bad one. */
class TargetFields {
  constructor(
    readonly value: Record<string, unknown>,
    readonly at: Path,
    readonly errors: FileErrors,
  ) {}

  /** A UsageError from a flag parser, placed at `key`. */
  placed<T>(key: string, read: () => T): T {
    try {
      return read();
    } catch (err) {
      throw this.errors.at([...this.at, key], (err as Error).message);
    }
  }

  port(key: string, v: unknown = this.value[key]): number {
    return this.placed(key, () => parseInteger(`target ${key}`, v, LIMITS.port));
  }

  duration(key: string, fallbackMs: number): number {
    if (this.value[key] === undefined) return fallbackMs;
    return this.placed(key, () => parseDurationMs(`target ${key}`, this.value[key], false));
  }

  host(): string {
    return this.value.host === undefined ? '127.0.0.1' : parseHost(String(this.value.host));
  }

  stringList(key: string): string[] {
    const v = this.value[key];
    if (v === undefined) return [];
    if (!Array.isArray(v) || v.some((a) => typeof a !== 'string' && typeof a !== 'number')) throw this.errors.at([...this.at, key], `${key} must be a list of strings`);
    return v.map(String);
  }

  /** `key: true|false` on a redis target; nothing when absent or false. */
  flag(key: 'tls' | 'socket'): { tls?: boolean; socket?: boolean } {
    const v = this.value[key];
    if (v === undefined || v === false) return {};
    if (v !== true) throw this.errors.at([...this.at, key], `${key} must be true or false on a redis target (got ${JSON.stringify(v)})`);
    return { [key]: true };
  }

  /** `cpus: 0-1,3` on a target the study starts: the CPUs its server is pinned to (taskset); nothing when absent. */
  cpus(): { cpus?: number[] } {
    const v = this.value.cpus;
    if (v === undefined) return {};
    return { cpus: this.placed('cpus', () => checkCpus('cpus', String(v))) };
  }

  address(): { host: string; port: number } {
    return this.placed('address', () => parseHostPort(String(this.value.address), 'address'));
  }

  /** `user`, `pass`, `dbnum` over what a uri gave; undefined when none is set. */
  credentials(fromUri: TargetCredentials | null = null): TargetCredentials | undefined {
    const v = this.value;
    if (v.user === undefined && v.pass === undefined && v.dbnum === undefined && fromUri === null) return undefined;
    const text = (key: string): string | null => {
      if (v[key] === undefined) return null;
      if (typeof v[key] !== 'string' && typeof v[key] !== 'number') throw this.errors.at([...this.at, key], `${key} must be a string`);
      const t = String(v[key]);
      if (t === '') throw this.errors.at([...this.at, key], `${key} must not be empty`);
      return t;
    };
    const user = text('user') ?? fromUri?.user ?? null;
    const password = text('pass') ?? fromUri?.password ?? null;
    rememberSecret(password);
    const dbnum = v.dbnum === undefined ? fromUri?.dbnum ?? null : this.placed('dbnum', () => parseInteger('target dbnum', v.dbnum, [0, 2 ** 31 - 1]));
    if (user !== null && password === null) throw this.errors.at([...this.at, 'user'], 'a target with user: needs pass: too');
    return { user, password, dbnum };
  }

  /** A `uri:` target: its address and credentials (TLS and unix sockets: see the transport). */
  uri(): TargetSpec {
    const u = this.placed('uri', () => parseUri(String(this.value.uri), 'target uri'));
    if (u.host === null || u.port === null || u.tls) {
      throw this.errors.at([...this.at, 'uri'], 'a uri target takes redis://[user[:pass]@]host[:port][/db] or redis+cluster://… here');
    }
    return { kind: 'address', host: u.host, port: u.port, ...(u.cluster ? { cluster: true } : {}), credentials: this.credentials({ user: u.user, password: u.password, dbnum: u.dbnum }) };
  }

  /** `cluster: true` on an address: a seed of a running Redis Cluster, measured with --cluster. */
  cluster(): { cluster?: boolean } {
    const v = this.value.cluster;
    if (v === undefined || v === false) return {};
    if (v !== true) throw this.errors.at([...this.at, 'cluster'], `cluster must be true or false (got ${JSON.stringify(v)})`);
    return { cluster: true };
  }
}

function readTarget(value: unknown, at: Path, errors: FileErrors, studyDir: string): TargetSpec {
  if (!isPlainObject(value)) throw errors.at(at, `target must be ${TARGET_FORMS}`);
  const kind = Object.keys(TARGET_FIELDS).find((k) => k in value);
  if (!kind) throw errors.at(at, `target must be ${TARGET_FORMS} (got keys: ${Object.keys(value).join(', ') || 'none'})`);
  for (const key of Object.keys(value)) {
    if (!TARGET_KEYS[kind].includes(key)) {
      throw errors.at([...at, key], `unknown key "${key}" in a ${kind === 'port' ? 'host/port' : kind} target (known: ${TARGET_KEYS[kind].join(', ')})`);
    }
  }
  const t = new TargetFields(value, at, errors);
  switch (kind) {
    case 'redis_cluster':
      return readClusterTarget(t);
    case 'redis':
      return withCredentials(readRedisTarget(t), t);
    case 'embedded':
      if (value.embedded !== true) throw errors.at([...at, 'embedded'], 'embedded must be true');
      return { kind: 'embedded' };
    case 'address':
      return withCredentials({ kind: 'address', ...t.address(), ...readTls(t, studyDir), ...t.cluster() }, t);
    case 'uri':
      return t.uri();
    case 'port':
      return withCredentials({ kind: 'address', host: t.host(), port: t.port('port'), ...readTls(t, studyDir), ...t.cluster() }, t);
    case 'socket': {
      const socket = value.socket;
      if (typeof socket !== 'string' || socket.trim().length === 0) throw errors.at([...at, 'socket'], 'socket must be the path of a unix socket');
      const resolved = t.placed('socket', () => checkSocketPath(path.resolve(studyDir, socket), 'socket'));
      return withCredentials({ kind: 'address', host: '127.0.0.1', port: 6379, socket: resolved }, t);
    }
    default:
      return withCredentials(readCommandTarget(t, studyDir), t);
  }
}

function withCredentials(spec: TargetSpec, t: TargetFields): TargetSpec {
  const credentials = t.credentials();
  return credentials ? { ...spec, credentials } : spec;
}

const TLS_KEYS = keysOf(TLS_FIELDS);

/** `tls: true` or `tls: { cacert: FILE, … }` on an address target; nothing without it. */
function readTls(t: TargetFields, studyDir: string): { tls?: TargetTls } {
  const v = t.value.tls;
  const at = [...t.at, 'tls'];
  if (v === undefined || v === false) return {};
  if (v === true) return { tls: {} };
  if (!isPlainObject(v)) throw t.errors.at(at, `tls must be true or a map with ${TLS_KEYS.join(', ')}`);
  const tls: TargetTls = {};
  for (const [key, value] of Object.entries(v)) {
    if (!TLS_KEYS.includes(key)) throw t.errors.at([...at, key], `unknown key "${key}" in tls (known: ${TLS_KEYS.join(', ')})`);
    if (key === 'insecure') {
      if (typeof value !== 'boolean') throw t.errors.at([...at, key], `insecure must be true or false (got ${JSON.stringify(value)})`);
      tls.insecure = value;
      continue;
    }
    if (typeof value !== 'string' || value.length === 0) throw t.errors.at([...at, key], `${key} must be a string`);
    const isPath = key === 'cacert' || key === 'cacertdir' || key === 'cert' || key === 'key';
    tls[key as Exclude<keyof TargetTls, 'insecure'>] = isPath ? path.resolve(studyDir, value) : value;
  }
  return { tls };
}

/** The run flags a target's transport stands for, as commander would hand them over. */
export function transportFlags(target: { socket?: string | null; tls?: TargetTls | null }): Record<string, string | boolean> {
  const flags: Record<string, string | boolean> = {};
  if (target.socket) flags.socket = target.socket;
  const tls = target.tls;
  if (tls) {
    flags.tls = true;
    for (const key of ['cacert', 'cacertdir', 'cert', 'key', 'sni'] as const) if (tls[key] !== undefined) flags[key] = tls[key]!;
    if (tls.insecure) flags.insecure = true;
    if (tls.ciphers !== undefined) flags.tlsCiphers = tls.ciphers;
    if (tls.ciphersuites !== undefined) flags.tlsCiphersuites = tls.ciphersuites;
  }
  return flags;
}

/** Most nodes a redis_cluster target may start. */
const MAX_CLUSTER_NODES = 64;

/** `{ redis_cluster: { primaries: 3, replicas: 1, persistence: PRESET } }` */
function readClusterTarget(t: TargetFields): TargetSpec {
  const v = t.value.redis_cluster;
  const at = [...t.at, 'redis_cluster'];
  if (!isPlainObject(v)) throw t.errors.at(at, 'redis_cluster must be a map: { primaries: 3, replicas: 1, persistence: PRESET }');
  for (const key of Object.keys(v)) {
    if (!keysOf(REDIS_CLUSTER_FIELDS).includes(key)) throw t.errors.at([...at, key], `unknown key "${key}" in redis_cluster (known: ${keysOf(REDIS_CLUSTER_FIELDS).join(', ')})`);
  }
  const count = (key: string, fallback: number, min: number): number => {
    const n = v[key] === undefined ? fallback : v[key];
    if (typeof n !== 'number' || !Number.isInteger(n) || n < min || n > MAX_CLUSTER_NODES) throw t.errors.at([...at, key], `${key} must be a whole number from ${min} to ${MAX_CLUSTER_NODES}`);
    return n;
  };
  const primaries = count('primaries', 3, 3);
  const replicas = count('replicas', 0, 0);
  if (primaries * (1 + replicas) > MAX_CLUSTER_NODES) throw t.errors.at(at, `a redis_cluster target starts at most ${MAX_CLUSTER_NODES} servers`);
  const preset = v.persistence === undefined ? 'none' : v.persistence;
  if (typeof preset !== 'string' || !(preset in REDIS_PRESETS)) {
    throw t.errors.at([...at, 'persistence'], `unknown redis preset ${JSON.stringify(preset)} (known: ${Object.keys(REDIS_PRESETS).join(', ')})`);
  }
  return {
    kind: 'redis_cluster',
    primaries,
    replicas,
    preset: preset as RedisPreset,
    binary: t.value.binary === undefined ? 'redis-server' : String(t.value.binary),
    readyTimeoutMs: t.duration('readyTimeout', 30_000),
    stopTimeoutMs: t.duration('stopTimeout', 10_000),
    ...t.flag('tls'),
  };
}

function readRedisTarget(t: TargetFields): TargetSpec {
  if (t.value.tls === true && t.value.socket === true) throw t.errors.at([...t.at, 'socket'], 'a redis target takes tls: true or socket: true, not both (TLS is over TCP)');
  const preset = t.value.redis;
  if (typeof preset !== 'string' || !(preset in REDIS_PRESETS)) {
    throw t.errors.at([...t.at, 'redis'], `unknown redis preset ${JSON.stringify(preset)} (known: ${Object.keys(REDIS_PRESETS).join(', ')})`);
  }
  return {
    kind: 'redis',
    preset: preset as RedisPreset,
    binary: t.value.binary === undefined ? 'redis-server' : String(t.value.binary),
    args: t.stringList('args'),
    readyTimeoutMs: t.duration('readyTimeout', 10_000),
    stopTimeoutMs: t.duration('stopTimeout', 10_000),
    ...t.flag('tls'),
    ...t.flag('socket'),
    ...t.cpus(),
  };
}

function readCommandTarget(t: TargetFields, studyDir: string): TargetSpec {
  const { value, at, errors } = t;
  const command = value.command;
  const okCommand =
    (typeof command === 'string' && command.trim().length > 0) ||
    (Array.isArray(command) && command.length > 0 && command.every((a) => typeof a === 'string' || typeof a === 'number'));
  if (!okCommand) throw errors.at([...at, 'command'], 'command must be a shell command line or a list [program, arg, ...]');
  const cmd = typeof command === 'string' ? command : (command as unknown[]).map(String);
  const text = typeof cmd === 'string' ? cmd : cmd.join(' ');
  const fixed = value.port === undefined ? null : t.port('port');
  if (fixed === null && !text.includes('{port}')) {
    throw errors.at([...at, 'command'], 'a command target needs a port: give port: N, or put {port} in the command to get a free one');
  }
  let env: Record<string, string> = {};
  if (value.env !== undefined) {
    if (!isPlainObject(value.env)) throw errors.at([...at, 'env'], 'env must be a map of NAME: value');
    env = Object.fromEntries(Object.entries(value.env).map(([k, v]) => [k, String(v)]));
  }
  return {
    kind: 'command',
    command: cmd,
    host: t.host(),
    port: fixed,
    cwd: value.cwd === undefined ? studyDir : path.resolve(studyDir, String(value.cwd)),
    env,
    readyTimeoutMs: t.duration('readyTimeout', 10_000),
    stopTimeoutMs: t.duration('stopTimeout', 5_000),
    ...t.cpus(),
  };
}

function onCpus(cpus: number[] | undefined): string {
  return cpus ? ` (cpus ${formatCpuList(cpus)})` : '';
}

/** Shown in the progress lines and the detail CSV's target column. */
export function describeTarget(t: TargetSpec): string {
  switch (t.kind) {
    case 'address':
      if (t.socket) return `unix socket ${t.socket}`;
      return `${t.cluster ? 'cluster seed ' : ''}${t.host}:${t.port}${t.tls ? ' (TLS)' : ''}`;
    case 'command':
      return `command: ${typeof t.command === 'string' ? t.command : t.command.join(' ')}${onCpus(t.cpus)}`;
    case 'redis':
      return `redis preset ${t.preset}${t.tls ? ' (TLS)' : ''}${t.socket ? ' (unix socket)' : ''}${onCpus(t.cpus)}`;
    case 'embedded':
      return 'embedded demo server';
    case 'redis_cluster':
      return `redis cluster ${t.primaries} primaries × ${1 + t.replicas} (preset ${t.preset})${t.tls ? ' (TLS)' : ''}`;
  }
}
