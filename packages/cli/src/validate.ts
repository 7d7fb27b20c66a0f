/**
 * From flags to a Plan: buildPlan reads the raw values (each value's own
 * parser is in flag-values.ts) and refuses here every combination of flags
 * that cannot run, before any engine or server is touched. A refusal is a
 * UsageError: the CLI prints that one line and exits 2.
 */
import { keySlots, mixRole, parseMixTemplate, parseTemplate, refusedOutsideQuotes, TemplateError, unverifiableReason, type Part } from './engine-js/command.js';
import { LIMITS, windowRefusal } from './engine-js/limits.js';
import { VERIFY_MIN_VALUE_SIZE } from './engine-js/values.js';
import { IO_CHOICES, type CommandSpec, type Mode, type Plan } from './engine-js/plan.js';
import { KEY_PATTERNS, type KeyPattern } from './engine-js/keys.js';
import { parseChoice, parseDurationMs, parseHost, parseHostPort, parseInteger, parsePositive, parseSocket, parseText, parseValueSize, shown } from './flag-values.js';
import { MAX_DBNUM, parseUri, type ParsedUri } from './uri.js';
import { rememberSecret } from './secrets.js';
import { keyName, SUITE, withBenchmarkDefaults } from './suite.js';
import { parseTls, type RawTlsOptions } from './tls-flags.js';
import { UsageError } from './usage-error.js';

/** Every mode, in the order help and messages list them. */
export const MODES = ['set', 'get', 'mixed'] as const satisfies readonly Mode[];
// Fails to compile when Plan gains a mode this list lacks.
const _allModes: readonly (typeof MODES)[number][] = [] as Mode[];
void _allModes;

export const ENGINE_CHOICES = ['auto', 'native', 'js'] as const;
export type EngineChoice = (typeof ENGINE_CHOICES)[number];

/**
 * One --command as given, with the --weight and --command-key-pattern that
 * followed it (raw text; readMix checks them). run-options.ts collects them.
 */
export interface RawMixCommand {
  template: string;
  weight?: string;
  keyPattern?: string;
}

/** The raw option values commander hands over (strings, booleans). */
export interface RawRunOptions extends RawTlsOptions {
  host: string;
  port: string;
  socket?: string;
  tls?: boolean;
  mode: string;
  requests: string;
  pipeline: string;
  keyspace: string;
  valueSize: string;
  setRatio: string;
  setCmd: string;
  getCmd: string;
  keyPrefix: string;
  seed?: string;
  verifyGet?: boolean;
  /** --pipeline-mode: window | batch. */
  pipelineMode?: string;
  /** --value-generation: mixed into every value (lost overwrites). */
  valueGeneration?: string;
  connections: string;
  keyPattern: string;
  keyStddev?: string;
  zipfExponent: string;
  threads?: string;
  io?: string;
  engine: string;
  preload: boolean;
  timeout: string;
  duration?: string;
  warmup?: string;
  rate?: string;
  /** -a/--pass; REDISCLI_AUTH when absent. */
  pass?: string;
  user?: string;
  dbnum?: string;
  resp3?: boolean;
  uri?: string;
  reconnect?: boolean;
  reconnectAttempts?: string;
  reconnectBackoff?: string;
  clientTracking?: boolean;
  /** --cluster, and its seeds (--cluster-node, repeatable). */
  cluster?: boolean;
  clusterNode?: string[];
  /** --command (with its --weight and --command-key-pattern), in command-line order. */
  commands?: RawMixCommand[];
  /** --multi-key-get N: the read command is MGET of N keys. */
  multiKeyGet?: string;
  /** Set when a --weight or --command-key-pattern had no --command before it (run-options.ts). */
  orphanMixSetting?: string | false;
  rampConnections?: string;
  /** --read-from primary|replica|any (with --cluster). */
  readFrom?: string;
  /** memtier's --ratio SET:GET (a mix of the write and read command so weighted). */
  ratio?: string;
}

/** Most commands in one mix, and the largest --weight: their sum stays far below 2^32. */
export const MIX_LIMITS = { commands: 100, weight: 1_000_000 } as const;

/** --command/--weight/--command-key-pattern as a Plan's mix; null without --command. */
export function readMix(raw: Pick<RawRunOptions, 'commands' | 'orphanMixSetting'>): CommandSpec[] | null {
  if (raw.orphanMixSetting) {
    const [flag, twice] = String(raw.orphanMixSetting).split(' ');
    throw new UsageError(twice ? `${flag} was given twice for one --command` : `${flag} applies to the --command before it, and there is none`);
  }
  const given = raw.commands ?? [];
  if (given.length === 0) return null;
  if (given.length > MIX_LIMITS.commands) throw new UsageError(`--command may be given at most ${MIX_LIMITS.commands} times (got ${given.length})`);
  return given.map((c) => {
    const template = String(c.template);
    try {
      parseMixTemplate(template, false);
    } catch (err) {
      if (err instanceof TemplateError) throw new UsageError(`--command ${err.message} (got ${shown(template)})`);
      throw err;
    }
    return {
      template,
      weight: c.weight === undefined ? 1 : parseInteger('--weight', c.weight, [1, MIX_LIMITS.weight]),
      keyPattern: c.keyPattern === undefined ? null : parseChoice<KeyPattern>('--command-key-pattern', c.keyPattern, KEY_PATTERNS),
    };
  });
}

/** The --command templates of a mix with no __key__: commands with no key, sent as written and never verified (parseMixTemplate). */
export function keylessMixCommands(plan: Plan): string[] {
  return (plan.commands ?? []).map((c) => c.template).filter((t) => !parseMixTemplate(t, plan.literalCommands).usesKey);
}

/** Most keys --multi-key-get reads per request. */
export const MAX_MULTI_KEY_GET = 1000;

/**
 * --get-cmd, or with --multi-key-get N the template `MGET K …` of N keys,
 * each K the key argument of --set-cmd (`SET p:__key__ __data__` writes
 * `p:<key>`, so MGET reads `p:__key__`: reads name what the writes wrote).
 */
function readGetCmd(raw: RawRunOptions): string {
  if (raw.multiKeyGet === undefined) return String(raw.getCmd);
  if (String(raw.getCmd) !== 'GET') throw new UsageError('--multi-key-get does not go with --get-cmd (it sets the read command: MGET of n keys)');
  const n = parseInteger('--multi-key-get', raw.multiKeyGet, [1, MAX_MULTI_KEY_GET]);
  return ['MGET', ...Array.from({ length: n }, () => writtenKeyArgument(String(raw.setCmd ?? 'SET')))].join(' ');
}

/** The key argument of a write template as template text (`p:__key__`); `__key__` when it has none or cannot be read (its own check says why). */
function writtenKeyArgument(setCmd: string): string {
  let parts: Part[] | undefined;
  try {
    parts = parseTemplate(setCmd, 'set').args.find((arg) => arg.some((p) => p.kind === 'key'));
  } catch {
    return '__key__';
  }
  if (parts === undefined) return '__key__';
  // Literal text a template reads as written: no spaces, quotes, backslashes or placeholder-like runs.
  const plain = (p: Part): string | null => {
    if (p.kind === 'key') return '__key__';
    const text = p.kind === 'literal' ? p.bytes.toString('utf8') : null;
    return text !== null && !/[\s'"\\]|__/.test(text) ? text : null;
  };
  const text = parts.map(plain);
  if (text.some((t) => t === null)) {
    throw new UsageError(`--multi-key-get reads MGET of --set-cmd's key, and that key argument has spaces, quotes or other placeholders around __key__; write the mix with --command instead (got ${shown(setCmd)})`);
  }
  return text.join('');
}

/**
 * --verify-get in mixed mode or a mix: read commands whose key argument no
 * write of the run names (`SET a:__key__` beside `GET b:__key__`). Their
 * nils are misses and only values an earlier run wrote there are checked:
 * said once, as a note (a run may read what an earlier one wrote).
 */
export function readsOfUnwrittenKeys(plan: Plan): { reads: string[]; writes: string[] } {
  const none = { reads: [], writes: [] };
  if (!plan.verifyGet) return none;
  const pairs: [string, 'set' | 'get'][] = plan.commands
    ? plan.commands.map((c) => [c.template, mixRole(c.template)])
    : plan.mode === 'mixed'
      ? [
          [plan.setCmd, 'set'],
          [plan.getCmd, 'get'],
        ]
      : [];
  const shapes = (source: string, role: 'set' | 'get'): string[] => {
    try {
      return parseTemplate(source, role, plan.literalCommands, true)
        .args.filter((arg) => arg.some((p) => p.kind === 'key'))
        .map((arg) => arg.map((p) => (p.kind === 'literal' ? `L${p.bytes.toString('hex')}` : p.kind)).join(' '));
    } catch {
      return [];
    }
  };
  const writes = pairs.filter(([, role]) => role === 'set').map(([t]) => t);
  const written = new Set(writes.flatMap((t) => shapes(t, 'set')));
  const reads = pairs.filter(([t, role]) => role === 'get' && shapes(t, 'get').some((shape) => !written.has(shape))).map(([t]) => t);
  return reads.length === 0 ? none : { reads, writes };
}

/**
 * --ramp-connections start:step:every: open `start` connections, then `step`
 * more every `every`, up to -c; a duration run in a closed loop only.
 */
export function parseRamp(raw: unknown, plan: Pick<Plan, 'connections' | 'durationMs' | 'rate'>): Plan['rampConnections'] {
  const text = String(raw).trim();
  const parts = text.split(':');
  const start = parts.length === 3 && /^\d+$/.test(parts[0]) ? Number(parts[0]) : NaN;
  const step = parts.length === 3 && /^\d+$/.test(parts[1]) ? Number(parts[1]) : NaN;
  let everyMs = NaN;
  if (parts.length === 3) {
    try {
      everyMs = parseDurationMs('every', parts[2], false);
    } catch {
      everyMs = NaN;
    }
  }
  if (!(start >= 1 && start <= plan.connections && step >= 1 && step <= LIMITS.connections[1] && everyMs > 0)) {
    throw new UsageError(`--ramp-connections must be start:step:every, e.g. 2:2:5s: start 1..${plan.connections} (-c) connections, step at least 1, every a duration like 500ms or 5s (got ${shown(raw)})`);
  }
  if (plan.durationMs === 0) throw new UsageError('--ramp-connections needs --duration (connections are added over time)');
  if (plan.rate > 0) throw new UsageError('--ramp-connections does not go with --rate (a closed loop: each connection sends as fast as its replies come)');
  return { start, step, everyMs };
}

/** memtier's --key-pattern SET:GET forms that are one of ours for both sides. */
const MEMTIER_KEY_PATTERNS: Record<string, KeyPattern> = { 'R:R': 'uniform', 'S:S': 'sequential', 'G:G': 'gaussian' };

/** --key-pattern: ours, or memtier's R:R, S:S, G:G (the same pattern for writes and reads). */
export function parseKeyPattern(raw: unknown): KeyPattern {
  const memtier = MEMTIER_KEY_PATTERNS[String(raw).trim().toUpperCase()];
  if (memtier) return memtier;
  if (/^[A-Za-z]:[A-Za-z]$/.test(String(raw).trim())) {
    throw new UsageError(`--key-pattern: of memtier's SET:GET patterns only R:R, S:S and G:G are taken (the same pattern for writes and reads: uniform, sequential, gaussian); or one of ${KEY_PATTERNS.join(', ')} (got ${shown(raw)})`);
  }
  return parseChoice<KeyPattern>('--key-pattern', raw, KEY_PATTERNS);
}

/**
 * memtier's `--ratio S:G` (default there 1:10): S writes to G reads, as a
 * mix of --set-cmd and --get-cmd with those weights (our --set-ratio is a
 * whole percentage, which 1:10 is not); a side of 0 leaves a set or get run.
 */
function applyMemtierRatio(plan: Plan, raw: RawRunOptions): void {
  const m = /^\s*(\d+)\s*:\s*(\d+)\s*$/.exec(String(raw.ratio));
  const writes = m ? Number(m[1]) : NaN;
  const reads = m ? Number(m[2]) : NaN;
  if (!m || writes + reads === 0 || writes > MIX_LIMITS.weight || reads > MIX_LIMITS.weight) {
    throw new UsageError(`--ratio must be SET:GET, whole numbers of writes to reads as memtier_benchmark takes it, e.g. 1:10, not both 0, each at most ${MIX_LIMITS.weight} (got ${shown(raw.ratio)})`);
  }
  if (plan.commands) throw new UsageError('--ratio does not go with --command (a mix names its commands and weights itself)');
  if (String(raw.mode) !== 'mixed') throw new UsageError('--ratio does not go with --mode (the ratio says the share of writes and reads)');
  if (String(raw.setRatio) !== '50') throw new UsageError('--ratio does not go with --set-ratio: give one');
  if (reads === 0) plan.mode = 'set';
  else if (writes === 0) plan.mode = 'get';
  else {
    // A bare name is spelt out as --set-cmd/--get-cmd take it: a mix would read a name it does not know as NAME key.
    const bare = (cmd: string) => !/\s|__/.test(cmd.trim());
    plan.commands = [
      { template: bare(plan.setCmd) ? `${plan.setCmd.trim()} __key__ __data__` : plan.setCmd, weight: writes, keyPattern: null },
      { template: bare(plan.getCmd) ? `${plan.getCmd.trim()} __key__` : plan.getCmd, weight: reads, keyPattern: null },
    ];
  }
}

/** --reconnect's attempts per drop and first backoff when not given. */
export const RECONNECT_DEFAULTS = { attempts: 10, backoffMs: 100 } as const;

/** Most --reconnect-attempts. */
const MAX_RECONNECT_ATTEMPTS = 1_000_000;

/** --reconnect and its two settings; null without --reconnect (a setting alone is a usage error). */
function readReconnect(raw: RawRunOptions): Plan['reconnect'] {
  if (!raw.reconnect) {
    if (raw.reconnectAttempts !== undefined) throw new UsageError('--reconnect-attempts needs --reconnect');
    if (raw.reconnectBackoff !== undefined) throw new UsageError('--reconnect-backoff needs --reconnect');
    return null;
  }
  return {
    attempts: raw.reconnectAttempts === undefined ? RECONNECT_DEFAULTS.attempts : parseInteger('--reconnect-attempts', raw.reconnectAttempts, [1, MAX_RECONNECT_ATTEMPTS]),
    backoffMs: raw.reconnectBackoff === undefined ? RECONNECT_DEFAULTS.backoffMs : parseDurationMs('--reconnect-backoff', raw.reconnectBackoff, false),
  };
}

export function defaultSeed(): number {
  return Date.now() % 4294967296 >>> 0;
}

/** The environment variable redis-cli reads the password from (so it stays out of `ps`). */
export const PASSWORD_ENV = 'REDISCLI_AUTH';

/** The plan's credentials and database, from the flags, then the URI, then REDISCLI_AUTH. */
function readCredentials(raw: RawRunOptions, uri: ParsedUri | null, env: Readonly<Record<string, string | undefined>>): Pick<Plan, 'user' | 'password' | 'dbnum' | 'resp3'> {
  if (raw.pass !== undefined && String(raw.pass) === '') throw new UsageError('-a/--pass must not be empty');
  if (raw.user !== undefined && String(raw.user).trim() === '') throw new UsageError('--user must not be empty');
  const password = raw.pass !== undefined ? String(raw.pass) : uri?.password ?? (env[PASSWORD_ENV] || null);
  rememberSecret(password);
  const user = raw.user !== undefined ? String(raw.user) : uri?.user ?? null;
  if (user !== null && password === null) throw new UsageError(`--user needs a password: -a/--pass, user:pass@ in --uri, or ${PASSWORD_ENV}`);
  const dbnum = raw.dbnum !== undefined ? parseInteger('--dbnum', raw.dbnum, [0, MAX_DBNUM]) : uri?.dbnum ?? null;
  return { user, password, dbnum, resp3: Boolean(raw.resp3) };
}

/**
 * Turns raw flag values into a Plan, or throws UsageError naming the flag.
 * `env` supplies REDISCLI_AUTH (the CLI passes process.env).
 */
export function buildPlan(raw: RawRunOptions, env: Readonly<Record<string, string | undefined>> = {}): { plan: Plan; engine: EngineChoice } {
  const uri = raw.uri === undefined ? null : parseUri(String(raw.uri));
  const host = uri?.host ?? parseHost(String(raw.host));
  if (host.length === 0) throw new UsageError('--host must not be empty');
  const mode = parseChoice<Mode>('--mode', raw.mode, MODES);
  const sizes = parseValueSize(raw.valueSize);
  const connections = parseInteger('-c/--connections', raw.connections, LIMITS.connections);
  const socket = parseSocket(raw.socket) ?? uri?.socket ?? null;
  // rediss:// asks for TLS as --tls does; the TLS flags then refine it.
  const tls = parseTls(raw, raw.tls === true || uri?.tls === true);
  if (socket !== null && tls !== null) throw new UsageError('--tls does not go with -s/--socket (TLS is over TCP)');
  const plan: Plan = {
    host,
    port: uri?.port ?? parseInteger('--port', raw.port, LIMITS.port),
    socket,
    tls,
    connections,
    pipeline: parseInteger('--pipeline', raw.pipeline, LIMITS.pipeline),
    requests: parseInteger('--requests', raw.requests, LIMITS.requests),
    mode,
    keyspace: parseInteger('--keyspace', raw.keyspace, LIMITS.keyspace),
    keyPattern: parseKeyPattern(raw.keyPattern),
    keyStddev: raw.keyStddev === undefined ? null : parsePositive('--key-stddev', raw.keyStddev, 2 ** 48),
    zipfExponent: parsePositive('--zipf-exponent', raw.zipfExponent, 5),
    valueSizeMin: sizes.min,
    valueSizeMax: sizes.max,
    setRatio: parseInteger('--set-ratio', raw.setRatio, LIMITS.setRatio),
    setCmd: String(raw.setCmd),
    getCmd: readGetCmd(raw),
    keyPrefix: parseText('--key-prefix', raw.keyPrefix),
    literalCommands: false,
    seed: raw.seed === undefined ? defaultSeed() : parseInteger('--seed', raw.seed, LIMITS.seed),
    verifyGet: Boolean(raw.verifyGet),
    preload: raw.preload !== false,
    threads: raw.threads === undefined ? 1 : parseInteger('--threads', raw.threads, LIMITS.threads),
    timeoutMs: parseDurationMs('--timeout', raw.timeout, true),
    durationMs: raw.duration === undefined ? 0 : parseDurationMs('--duration', raw.duration, false),
    warmupMs: raw.warmup === undefined ? 0 : parseDurationMs('--warmup', raw.warmup, true),
    rate: raw.rate === undefined ? 0 : parsePositive('--rate', raw.rate, 100_000_000),
    ...readCredentials(raw, uri, env),
    // RESPBENCH_IO=uring|epoll: --io's default (the test suite runs every native run on one backend with it).
    ...ioOption(raw.io, env.RESPBENCH_IO),
  };
  // Absent from the Plan for window, the default of a run (and of builds before the flag).
  if (raw.pipelineMode !== undefined && parseChoice('--pipeline-mode', raw.pipelineMode, PIPELINE_MODES) === 'batch') plan.pipelineMode = 'batch';
  if (raw.valueGeneration !== undefined) {
    // Absent from the Plan at 0, the values of builds before the flag.
    const generation = parseInteger('--value-generation', raw.valueGeneration, LIMITS.valueGeneration);
    if (generation > 0) plan.valueGeneration = generation;
  }
  if (raw.clientTracking) {
    if (!plan.resp3) throw new UsageError('--client-tracking needs -3/--resp3 (invalidations come as RESP3 push frames)');
    plan.clientTracking = true;
  }
  const reconnect = readReconnect(raw);
  if (reconnect) plan.reconnect = reconnect;
  const mix = readMix(raw);
  if (mix) plan.commands = mix;
  if (raw.ratio !== undefined) applyMemtierRatio(plan, raw);
  if (raw.rampConnections !== undefined) plan.rampConnections = parseRamp(raw.rampConnections, plan);
  checkWindow(plan);
  checkTemplates(plan);
  const cluster = readCluster(uri?.cluster ? { ...raw, cluster: true } : raw, plan);
  if (cluster) plan.cluster = cluster;
  const engine = parseChoice<EngineChoice>('--engine', raw.engine, ENGINE_CHOICES);
  return { plan, engine };
}

/** --pipeline-mode's values. */
export const PIPELINE_MODES = ['window', 'batch'] as const;

/**
 * What one connection has in flight must fit: the engines refuse a larger
 * window too (engine-js/limits.ts windowRefusal, the crate's
 * limits::window_refusal); here it is said in flags.
 */
export function checkWindow(plan: Plan): void {
  if (windowRefusal(plan) === null) return;
  const max = LIMITS.windowBytes[1];
  throw new UsageError(
    `-P/--pipeline × -d/--value-size (the bytes of values one connection has in flight) must be at most ${max} (1 GiB): -P ${plan.pipeline} × -d ${plan.valueSizeMax} = ${plan.pipeline * plan.valueSizeMax}; lower -P or -d`,
  );
}

/**
 * The command templates must parse (docs/workload.md, "Template grammar"),
 * and reads must be verifiable when asked. This runs before any engine: the
 * native engine, whose parser is the same grammar, never is the first to see
 * a bad template.
 */
export function checkTemplates(plan: Plan): void {
  let get;
  try {
    parseTemplate(plan.setCmd, 'set');
  } catch (err) {
    if (err instanceof TemplateError) throw new UsageError(`--set-cmd ${err.message} (got ${shown(plan.setCmd)})`);
    throw err;
  }
  try {
    get = parseTemplate(plan.getCmd, 'get');
  } catch (err) {
    if (err instanceof TemplateError) throw new UsageError(`--get-cmd ${err.message} (got ${shown(plan.getCmd)})`);
    throw err;
  }
  if (plan.mode === 'get' && plan.preload && !plan.commands && keySlots(parseTemplate(plan.setCmd, 'set')).keyCount > 1) {
    throw new UsageError(`--set-cmd names several keys, which get mode's preload cannot write one key at a time; use a one-key write command or --no-preload (got ${shown(plan.setCmd)})`);
  }
  const reason = plan.verifyGet ? unverifiableReason(get) : null;
  if (reason) throw new UsageError(`--get-cmd: ${reason} with --verify-get (got ${shown(plan.getCmd)})`);
  if (plan.verifyGet && plan.valueSizeMin < VERIFY_MIN_VALUE_SIZE) throw new UsageError(verifySizeText(plan));
}

/**
 * --cluster and its seeds (--cluster-node alone implies --cluster): the
 * topology is left empty for discovery (cluster.ts). Refused where a
 * cluster cannot do what the plan asks, before any connection.
 */
export function readCluster(raw: RawRunOptions, plan: Plan): Plan['cluster'] {
  const seedsGiven = raw.clusterNode ?? [];
  const readFrom = raw.readFrom ?? 'primary';
  if (readFrom !== 'primary' && readFrom !== 'replica' && readFrom !== 'any') throw new UsageError(`--read-from must be primary, replica or any (got ${shown(String(readFrom))})`);
  if (!raw.cluster && seedsGiven.length === 0) {
    if (raw.readFrom !== undefined) throw new UsageError('--read-from goes with --cluster (a single server has no replicas to route reads to)');
    return null;
  }
  const seeds = seedsGiven.map((s) => {
    const { host, port } = parseHostPort(String(s), '--cluster-node');
    return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
  });
  if (plan.socket !== null) throw new UsageError('--cluster does not go with -s/--socket (cluster nodes are reached over TCP at the addresses they announce)');
  if (plan.dbnum !== null && plan.dbnum !== 0) throw new UsageError(`--cluster: a cluster has database 0 only (got --dbnum ${plan.dbnum})`);
  // Each connection has one socket per primary, opened together before the clock starts; adding connections mid-run is not done for a cluster yet.
  if (plan.rampConnections) throw new UsageError('--cluster does not go with --ramp-connections yet (each connection opens one socket per primary before the run starts)');
  const used: [string, string, 'set' | 'get'][] = [];
  if (plan.commands) {
    // A mix preloads nothing: its commands are all it sends.
    plan.commands.forEach((c, i) => used.push([`--command ${i + 1}`, c.template, mixRole(c.template)]));
  } else {
    if (plan.mode !== 'get' || plan.preload) used.push(['--set-cmd', plan.setCmd, 'set']);
    if (plan.mode !== 'set') used.push([raw.multiKeyGet !== undefined ? '--multi-key-get' : '--get-cmd', plan.getCmd, 'get']);
  }
  for (const [flag, source, role] of used) {
    // Every template here has parsed already; a mix command with no key is refused just below, by name.
    const t = parseTemplate(source, role, plan.literalCommands, true);
    const keyArgs = t.args.filter((parts) => parts.some((p) => p.kind === 'key'));
    if (keyArgs.length === 0) throw new UsageError(`${flag}: under --cluster a command needs __key__, whose slot says which primary gets it (got ${shown(source)})`);
    if (keyArgs.some((parts) => parts.some((p) => p.kind === 'data' || p.kind === 'randInt'))) {
      throw new UsageError(`${flag}: under --cluster the key argument may hold only __key__ and fixed text (its slot must follow from the key) (got ${shown(source)})`);
    }
    if (keyArgs.length > 1 && !keysShareSlot(keyArgs, plan.keyPrefix)) {
      throw new UsageError(`${flag}: under --cluster every key of a command must hash to one slot, and these keys can span slots; put a {tag} in --key-prefix (e.g. --key-prefix '{bench}:key:') so that all keys share a slot, or give one key argument (got ${shown(source)})`);
    }
  }
  return { seeds, nodes: [], slots: [], ...(readFrom !== 'primary' ? { readFrom } : {}) };
}

/**
 * Whether every key a multi-key command names hashes to one slot whatever the
 * key index: each key argument's fixed text before its digits (literal text
 * and --key-prefix) holds a whole non-empty {hashtag}, the same in each.
 */
function keysShareSlot(keyArgs: Part[][], keyPrefix: string): boolean {
  const tags = keyArgs.map((parts) => {
    const head: Buffer[] = [];
    for (const p of parts) {
      if (p.kind === 'literal') head.push(p.bytes);
      else if (p.kind === 'key') {
        head.push(Buffer.from(keyPrefix));
        break;
      }
    }
    const bytes = Buffer.concat(head);
    const open = bytes.indexOf(0x7b); // '{'
    if (open < 0) return null;
    const close = bytes.indexOf(0x7d, open + 1); // '}'
    return close > open + 1 ? bytes.subarray(open + 1, close).toString('latin1') : null;
  });
  return tags.every((t) => t !== null && t === tags[0]);
}

/**
 * Why --verify-get refuses small values: below 8 bytes a value holds only
 * part of its key's hash, and another key's value would often verify.
 */
export function verifySizeText(plan: Plan): string {
  const size = plan.valueSizeMin === plan.valueSizeMax ? `${plan.valueSizeMin}` : `${plan.valueSizeMin}-${plan.valueSizeMax}`;
  return `--verify-get needs values of at least ${VERIFY_MIN_VALUE_SIZE} bytes (--value-size ${VERIFY_MIN_VALUE_SIZE} or more): a shorter value holds only part of its key's hash, so another key's value could pass for it (got --value-size ${size})`;
}

/** Most load machines one result may come from. */
export const MAX_CLIENT_COUNT = 1000;

/** --client-index I --client-count N: this machine's share (0-based) of a run on N machines. */
export interface ClientShare {
  index: number;
  count: number;
}

/**
 * --client-index and --client-count, checked against the Plan: N × -c
 * connections of which this machine runs its share (prepare.ts). Every
 * machine must draw the same key streams, so the seed must be given.
 */
export function readClientShare(plan: Plan, opts: { clientIndex?: string; clientCount?: string; seed?: string }): ClientShare | null {
  if (opts.clientIndex === undefined && opts.clientCount === undefined) return null;
  if (opts.clientIndex === undefined || opts.clientCount === undefined) throw new UsageError('--client-index and --client-count go together');
  const count = parseInteger('--client-count', opts.clientCount, [1, MAX_CLIENT_COUNT]);
  if (plan.rampConnections) throw new UsageError('--ramp-connections does not go with --client-index/--client-count (each machine would ramp its own share)');
  const index = parseInteger('--client-index', opts.clientIndex, [0, count - 1]);
  if (opts.seed === undefined && count > 1) throw new UsageError('--client-count needs --seed: every load machine must draw the same key streams');
  if (plan.connections * count > LIMITS.connections[1]) {
    throw new UsageError(`-c/--connections × --client-count must be at most ${LIMITS.connections[1]} (got ${plan.connections} × ${count})`);
  }
  return { index, count };
}

/** What the top-level command's line holds beside a run's flags, for the refusals that weigh both. */
export interface RunCommandLine {
  /** -t/--tests was given (parsed). */
  tests: boolean;
  /** The command words after the options, or null. */
  command: readonly string[] | null;
  /** --compare was given (parsed). */
  compare: boolean;
  targetName?: string;
  csv: boolean;
  embedded: boolean;
  hdrLog?: string;
  html?: string;
  clientIndex?: string;
  clientCount?: string;
  seed?: string;
  /** memtier's --ratio: its mix is made of --set-cmd and --get-cmd, which it may name. */
  ratio?: string;
}

/**
 * The top-level command's refusals of flags that do not go together, in
 * the order a user meets them; `given(option)` says whether an option came
 * from the command line (not its default). Returns this machine's share.
 */
export function checkRunCommand(plan: Plan, line: RunCommandLine, given: (option: string) => boolean): ClientShare | null {
  const { tests, command } = line;
  // Each machine runs -c connections, and -t or a command on the line takes redis-benchmark's -c 50 when none is given.
  const share = readClientShare(tests || command ? withBenchmarkDefaults(plan, given) : plan, line);
  if (plan.commands && (tests || command)) throw new UsageError(`--command does not go with ${tests ? '-t/--tests' : 'a command after the options'} (the mix is the workload)`);
  if (plan.commands && line.ratio === undefined) {
    // The simple form of a workload and a mix do not combine: one would be silently ignored.
    const simple = [['mode', '--mode'], ['setRatio', '--set-ratio'], ['setCmd', '--set-cmd'], ['getCmd', '--get-cmd']].find(([key]) => given(key));
    if (simple) throw new UsageError(`${simple[1]} does not go with --command (a mix names its commands and weights itself)`);
  }
  // Either bound of a run, never both: the other would be silently ignored.
  if (plan.durationMs > 0 && given('requests')) throw new UsageError('-n/--requests and --duration do not go together: a run is bounded by a count of requests or by time; give one');
  if (line.targetName !== undefined && !line.compare) throw new UsageError('--target-name goes with --compare');
  if (!tests && (line.csv || line.compare)) throw new UsageError(`${line.csv ? '--csv' : '--compare'} goes with -t/--tests`);
  // The demo server speaks plain TCP on a port of its own.
  if (line.embedded && (plan.socket !== null || plan.tls !== null)) {
    throw new UsageError(`${plan.socket !== null ? '-s/--socket' : '--tls'} does not go with --embedded (the demo server listens on plain TCP)`);
  }
  if (line.hdrLog !== undefined && tests) throw new UsageError('--hdr-log does not go with -t/--tests (it logs one run; run each test on its own)');
  if (tests && command) throw new UsageError(`-t/--tests and a command on the line (${command.join(' ')}) do not go together: give one`);
  if (line.html !== undefined && tests) throw new UsageError('--html charts one run: it does not go with -t/--tests');
  // -t runs against a cluster with hash-tagged keys (suite.ts keyName); a command on the line names its own keys, whose slots nothing checks.
  if (plan.cluster && (command || line.embedded)) {
    throw new UsageError(`--cluster does not go with ${command ? 'a command on the line' : '--embedded'} (it runs -t/--tests, --mode set/get/mixed or a --command mix against a cluster)`);
  }
  if (plan.cluster && line.compare) throw new UsageError('--compare does not go with --cluster (the second target would need a cluster discovery of its own; run -t on each and use respbench compare)');
  if (tests || command) checkSuiteFlags(plan, given, tests ? '-t/--tests' : 'a command on the line');
  if (command) checkCommandWords(command);
  return share;
}

/** What the command line must not hold beside -t or a command (each test has its own command). */
export function checkSuiteFlags(plan: Plan, given: (option: string) => boolean, what = '-t/--tests'): void {
  for (const flag of ['mode', 'setCmd', 'getCmd', 'verifyGet', 'setRatio']) {
    if (given(flag)) {
      const name = `--${flag.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;
      throw new UsageError(`${name} does not go with ${what} (${what === '-t/--tests' ? 'each test has its own command' : 'it is the command'})`);
    }
  }
  // The prefix is pasted into the suite's command text, where the template
  // grammar (docs/workload.md) would split it at a space, unquote it at a
  // quote, refuse a control character, or read a placeholder in `__`
  // (`x_` before `__rand_int__` too).
  const p = plan.keyPrefix;
  if (/[\s"']|__|_$/.test(p) || [...p].some((ch) => refusedOutsideQuotes(ch.codePointAt(0)!))) {
    throw new UsageError(
      `--key-prefix must not contain spaces, quotes, control or invisible characters or "__", nor end in "_", with ${what} (got ${shown(p)})`,
    );
  }
  // Belt and braces: every suite command must parse here, before any engine sees it.
  for (const test of SUITE) {
    try {
      parseTemplate(test.command(keyName(p, Boolean(plan.cluster)), true), 'set', true);
    } catch (err) {
      if (err instanceof TemplateError) throw new UsageError(`--key-prefix makes the ${test.name} test's command ${err.message} (got ${shown(p)})`);
      throw err;
    }
  }
}


/** A command on the line (`respbench INCR counter:__rand_int__`): redis-benchmark's words, each one argument. */
export function checkCommandWords(words: readonly string[]): void {
  for (const w of words) {
    if (/\s/.test(w) || w === '') throw new UsageError(`the command's arguments must not be empty or contain spaces (got ${JSON.stringify(w)})`);
  }
  const command = words.join(' ');
  try {
    parseTemplate(command, 'set', true);
  } catch (err) {
    if (err instanceof TemplateError) throw new UsageError(`the command ${err.message} (got ${JSON.stringify(command)})`);
    throw err;
  }
}

/** What a capacity search sets for each step itself: a flag for it has no place beside it (capacity and capacity studies). */
export const SET_BY_CAPACITY = [
  ['rate', '--rate'],
  ['duration', '--duration'],
  ['requests', '-n/--requests'],
] as const;

/** `respbench capacity`'s refusals: it needs an SLO, and it sets each step's rate and length. */
export function checkCapacityFlags(slo: string | undefined, given: (option: string) => boolean): asserts slo is string {
  if (slo === undefined) throw new UsageError("capacity needs --slo, e.g. --slo 'p99<=1ms'");
  for (const [name, flag] of SET_BY_CAPACITY) {
    if (given(name)) throw new UsageError(`capacity sets each step's rate and length itself: use --start-rate and --step-duration instead of ${flag}`);
  }
}

/**
 * A capacity study's refusals (`mode: capacity` in the study file): it sets
 * each step's rate and length as `capacity` does, so none of them may be
 * given on the command line (`givenOnLine`) or in the file (`fileLineOf`:
 * "FILE:LINE" where a scenario or the defaults set it, else undefined).
 */
export function checkCapacityStudyFlags(givenOnLine: (key: string) => boolean, fileLineOf: (key: string) => string | undefined): void {
  for (const [key] of SET_BY_CAPACITY) {
    const why = `a capacity study sets each step's rate and length itself: use start-rate and step-duration instead of ${key}`;
    if (givenOnLine(key)) throw new UsageError(`--${key}: ${why}`);
    const at = fileLineOf(key);
    if (at !== undefined) throw new UsageError(`${at}: ${why}`);
  }
}

/**
 * -u/--uri names the server: an -h/--host, -p/--port or -s/--socket given
 * beside it would be ignored without a word, so the pair is refused.
 */
export function checkUriFlags(raw: Pick<RawRunOptions, 'uri' | 'clusterNode'>, given: (option: string) => boolean): void {
  // --cluster-node names the seeds: the server -h/-p or -u would name is not tried then (it was dropped without a word).
  if (raw.clusterNode !== undefined && raw.clusterNode.length > 0) {
    for (const [key, flag] of [['host', '-h/--host'], ['port', '-p/--port'], ['uri', '-u/--uri']] as const) {
      if (given(key)) throw new UsageError(`--cluster-node and ${flag} both name the seed: give the seeds with --cluster-node (repeat it), or the one seed with ${flag} and --cluster`);
    }
  }
  if (raw.uri === undefined) return;
  for (const [key, flag] of [['host', '-h/--host'], ['port', '-p/--port'], ['socket', '-s/--socket']] as const) {
    if (given(key)) throw new UsageError(`-u/--uri and ${flag} both name the server: give one (the URI holds it: redis://HOST:PORT, unix:///PATH)`);
  }
}

/** -x/--repeat N (N > 1) repeats one run: not a -t suite, not a --compare. */
export function checkRepeatFlags(repeat: number, tests: boolean, compare: boolean): void {
  if (repeat > 1 && (tests || compare)) throw new UsageError('-x/--repeat repeats one run; not with -t or --compare');
}

/** -I/--idle opens connections and sends nothing: nothing else that sends or reports goes with it. */
export function checkIdleFlags(flags: { loop: boolean; tests?: string; json?: boolean }, command: readonly string[]): void {
  if (flags.loop || flags.tests !== undefined || command.length > 0 || flags.json) throw new UsageError('-I/--idle opens connections and sends nothing: it does not go with -l, -t, --json or a command');
}

/** The live metrics' companions need what they qualify: --metrics-linger needs --metrics-listen, --statsd-prefix needs --statsd. */
export function checkTelemetryFlags(flags: { metricsListen?: string; metricsLinger?: string; statsd?: string; statsdPrefix?: string }): void {
  if (flags.metricsLinger !== undefined && flags.metricsListen === undefined) throw new UsageError('--metrics-linger needs --metrics-listen');
  if (flags.statsdPrefix !== undefined && flags.statsd === undefined) throw new UsageError('--statsd-prefix needs --statsd');
}

/** A study's targets give the address: --host, --port and --uri on its command line are refused. */
export function checkStudyFlags(fromCli: (option: string) => boolean): void {
  for (const key of ['host', 'port', 'uri']) {
    if (fromCli(key)) throw new UsageError(`--${key} does not apply to a study: each scenario's target gives the address (target: { address: 'HOST:PORT' } or { uri: 'redis://…' })`);
  }
}

/** --io (or, when it is not given, RESPBENCH_IO; empty there is unset): the native engine's I/O backend. */
function ioOption(flag: string | undefined, env: string | undefined): Pick<Plan, 'io'> {
  if (flag !== undefined) return { io: parseChoice('--io', flag, IO_CHOICES) };
  return env === undefined || env === '' ? {} : { io: parseChoice('RESPBENCH_IO', env, IO_CHOICES) };
}
