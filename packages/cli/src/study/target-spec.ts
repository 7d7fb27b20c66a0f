/**
 * A study's targets: what each `target:` form (a preset redis-server, a
 * local cluster, an address, a uri, a unix socket, a command, the demo
 * server) stands for, read from the file with the file and line of a bad
 * value, and described in the progress lines.
 */
import path from 'node:path';
import { LIMITS } from '../engine-js/limits.js';
import { checkCpus, formatCpuList } from '../cpus.js';
import { checkSocketPath, parseDurationMs, parseHost, parseHostPort, parseInteger } from '../flag-values.js';
import { parseUri } from '../uri.js';
import { redactCommandLine, rememberSecret } from '../secrets.js';
import { keysOf, REDIS_CLUSTER_FIELDS, REDIS_PRESETS, TARGET_FIELDS, TLS_FIELDS } from './file-format.js';
import { isPlainObject, type FileErrors, type Path } from './file-errors.js';
import type { RawTlsOptions } from '../tls-flags.js';

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
export type TargetTls = Omit<RawTlsOptions, 'tlsCiphers' | 'tlsCiphersuites'> & { ciphers?: string; ciphersuites?: string };

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

export const TARGET_FORMS = "one of { redis: PRESET }, { redis_cluster: { primaries: 3, replicas: 1, persistence: PRESET } }, { address: 'HOST:PORT' } (cluster: true for a cluster seed), { uri: 'redis://…' or 'redis+cluster://…' }, { socket: PATH }, { command: CMD, port: N }, { embedded: true }";
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

export function readTarget(value: unknown, at: Path, errors: FileErrors, studyDir: string): TargetSpec {
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
      // The command may start the server with its password (--requirepass): never shown.
      return `command: ${redactCommandLine(typeof t.command === 'string' ? t.command : t.command.join(' '), t.credentials?.password)}${onCpus(t.cpus)}`;
    case 'redis':
      return `redis preset ${t.preset}${t.tls ? ' (TLS)' : ''}${t.socket ? ' (unix socket)' : ''}${onCpus(t.cpus)}`;
    case 'embedded':
      return 'embedded demo server';
    case 'redis_cluster':
      return `redis cluster ${t.primaries} primaries × ${1 + t.replicas} (preset ${t.preset})${t.tls ? ' (TLS)' : ''}`;
  }
}
