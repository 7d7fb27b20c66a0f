/**
 * The shape of a study file, declared once: every key each map takes and
 * what its value is. spec.ts checks a file's keys against it (and reads each
 * value with the parser named here by kind); schema.ts turns it into the
 * JSON Schema that editors use (`# yaml-language-server: $schema=…`). A key
 * added here is known to both; a key only one of them knows cannot happen.
 */
import { MODES } from '../validate.js';
import { KEY_PATTERNS } from '../engine-js/keys.js';
import { DURATION_UNITS_NS } from '../flag-values.js';
import { LIMITS } from '../engine-js/limits.js';

/** redis-server's persistence presets a redis target takes (the arguments each stands for). */
export const REDIS_PRESETS = {
  none: ['--save', '', '--appendonly', 'no'],
  rdb_default: ['--save', '3600 1 300 100 60 10000', '--appendonly', 'no'],
  aof_no: ['--save', '', '--appendonly', 'yes', '--appendfsync', 'no'],
  aof_everysec: ['--save', '', '--appendonly', 'yes', '--appendfsync', 'everysec'],
  aof_always: ['--save', '', '--appendonly', 'yes', '--appendfsync', 'always'],
} as const satisfies Record<string, readonly string[]>;

const PRESETS = Object.keys(REDIS_PRESETS);

/** What a value is: the schema's type, and for spec.ts which reader checks it. */
export type Shape =
  | { kind: 'text'; pattern?: string; values?: readonly string[] }
  | { kind: 'integer'; min: number; max: number }
  | { kind: 'boolean' }
  | { kind: 'true' }
  /** A duration in flag-values.ts's grammar (`500ms`, `10s`), or 0 where allowed. */
  | { kind: 'duration' }
  /** A run flag's value as the command line takes it: text or a number. */
  | { kind: 'flagValue' }
  /** `10%` or a number. */
  | { kind: 'percentage' }
  | { kind: 'list'; of: Shape; orText?: boolean }
  | { kind: 'textOrList' }
  | { kind: 'names' }
  | { kind: 'map'; fields: Fields; runFlags?: boolean }
  | { kind: 'oneOf'; shapes: Shape[] }
  | { kind: 'ref'; to: 'target' | 'group' | 'scenario' | 'commands' };

export interface Field {
  shape: Shape;
  doc: string;
}

export type Fields = Record<string, Field>;

const text = (doc: string, extra: Omit<Extract<Shape, { kind: 'text' }>, 'kind'> = {}): Field => ({ shape: { kind: 'text', ...extra }, doc });
const duration = (doc: string): Field => ({ shape: { kind: 'duration' }, doc });
const bool = (doc: string): Field => ({ shape: { kind: 'boolean' }, doc });

const MODES_FIELD: Field = { shape: { kind: 'list', of: { kind: 'text', values: MODES }, orText: true }, doc: `the workload modes each scenario runs: ${MODES.join(', ')}` };

/** A capacity study's settings at the top level, either spelling (as `respbench capacity`'s flags). */
export const CAPACITY_FIELDS: Fields = {
  slo: text("the latency SLO of every capacity search, e.g. 'p99<=1ms' (with mode: capacity)"),
  'start-rate': { shape: { kind: 'flagValue' }, doc: 'the first step\'s rate, requests per second (default: a share of a closed-loop probe)' },
  startRate: { shape: { kind: 'flagValue' }, doc: 'start-rate, in camelCase' },
  'step-duration': duration('how long each step of the search runs (default 10s)'),
  stepDuration: duration('step-duration, in camelCase'),
  precision: { shape: { kind: 'percentage' }, doc: 'stop when the bracket is this narrow, e.g. 5%' },
};

export const TOP_FIELDS: Fields = {
  $schema: text("this file's JSON Schema, for an editor (respbench schema prints it); the study ignores it"),
  name: text('names the output files: letters, digits, ".", "_" or "-" (default: the file\'s name)', { pattern: '^[\\w.-]+$' }),
  description: text('what the study is for'),
  rounds: { shape: { kind: 'integer', min: 1, max: 1000 }, doc: 'whole runs of every scenario and mode (default 3)' },
  mode: text('capacity: each round is a capacity search within slo', { values: ['capacity'] }),
  modes: MODES_FIELD,
  baseline: text('the scenario the others are compared with (a ratio: this as a percentage of the baseline)'),
  cvWarn: { shape: { kind: 'percentage' }, doc: "warn when a scenario's rounds' ops/s vary more than this, e.g. 10%" },
  percentiles: { shape: { kind: 'list', of: { kind: 'flagValue' }, orText: true }, doc: 'the latency percentiles of the tables and CSVs, e.g. [50, 99, 99.99]' },
  defaults: { shape: { kind: 'map', fields: {}, runFlags: true }, doc: 'run flags for every scenario (a group\'s and a scenario\'s own win)' },
  groups: { shape: { kind: 'list', of: { kind: 'ref', to: 'group' } }, doc: 'groups of scenarios, each with a title' },
  scenarios: { shape: { kind: 'list', of: { kind: 'ref', to: 'scenario' } }, doc: 'the scenarios, as one group (instead of groups)' },
  ...CAPACITY_FIELDS,
};

export const GROUP_FIELDS: Fields = {
  title: text('the group\'s heading in the reports'),
  description: text('what the group compares'),
  modes: MODES_FIELD,
  target: { shape: { kind: 'ref', to: 'target' }, doc: 'the target of every scenario of the group that names none' },
  scenarios: { shape: { kind: 'list', of: { kind: 'ref', to: 'scenario' } }, doc: 'the group\'s scenarios' },
};

export const SCENARIO_FIELDS: Fields = {
  name: text('unique in the study: it names the rows and the baseline'),
  description: text('what the scenario is'),
  tags: { shape: { kind: 'textOrList' }, doc: 'labels shown beside the name' },
  target: { shape: { kind: 'ref', to: 'target' }, doc: 'the server the scenario measures' },
  modes: MODES_FIELD,
};

/** A `commands:` entry: a template, or a map with its weight and key pattern. */
export const MIX_COMMAND_FIELDS: Fields = {
  command: { shape: { kind: 'flagValue' }, doc: "a template as --command takes it, e.g. 'GET __key__'" },
  weight: { shape: { kind: 'flagValue' }, doc: 'its share of the requests, a whole number >= 1 (default 1)' },
  keyPattern: text('its key pattern (default the run\'s)', { values: KEY_PATTERNS }),
};

export const TLS_FIELDS: Fields = {
  cacert: text('PEM file of CA certificates to trust as well (relative to the study file)'),
  cacertdir: text('folder of PEM CA certificates to trust as well'),
  cert: text('client certificate (PEM), with key'),
  key: text('private key of cert (PEM)'),
  insecure: bool('do not verify the server\'s certificate'),
  sni: text('server name to send and check the certificate against'),
  ciphers: text('TLS 1.2 ciphers, ":"-separated (as --tls-ciphers)'),
  ciphersuites: text('TLS 1.3 suites, ":"-separated (as --tls-ciphersuites)'),
};

export const REDIS_CLUSTER_FIELDS: Fields = {
  primaries: { shape: { kind: 'integer', min: 3, max: 64 }, doc: 'primaries (default 3)' },
  replicas: { shape: { kind: 'integer', min: 0, max: 64 }, doc: 'replicas per primary (default 0)' },
  persistence: text('the persistence preset of every node', { values: Object.keys(REDIS_PRESETS) }),
};

const PORT: Field = { shape: { kind: 'integer', min: LIMITS.port[0], max: LIMITS.port[1] }, doc: 'TCP port' };
const CREDENTIALS: Fields = {
  user: text('ACL user (needs pass)'),
  pass: text('the password (never printed)'),
  dbnum: { shape: { kind: 'integer', min: 0, max: 2 ** 31 - 1 }, doc: 'SELECT this database' },
};
const CPUS = text('pin the server to these CPUs (taskset -c), e.g. 0-1,3');
const TLS_OF_ADDRESS: Field = { shape: { kind: 'oneOf', shapes: [{ kind: 'boolean' }, { kind: 'map', fields: TLS_FIELDS }] }, doc: 'TLS: true (the system\'s roots) or its settings' };

/**
 * The target forms, by the key that names each (the first of these keys a
 * target map holds decides its form, in this order).
 */
export const TARGET_FIELDS: Record<string, Fields> = {
  redis_cluster: {
    redis_cluster: { shape: { kind: 'map', fields: REDIS_CLUSTER_FIELDS }, doc: 'a local Redis Cluster the study starts' },
    binary: text('the redis-server to run (default redis-server)'),
    readyTimeout: duration('how long the servers may take to start (default 30s)'),
    stopTimeout: duration('how long they may take to stop (default 10s)'),
    tls: bool('every node TLS only, on a CA the study makes'),
  },
  redis: {
    redis: text('redis-server on a free port with this persistence preset', { values: PRESETS }),
    binary: text('the redis-server to run (default redis-server)'),
    args: { shape: { kind: 'list', of: { kind: 'flagValue' } }, doc: 'more redis-server arguments' },
    readyTimeout: duration('how long the server may take to start (default 10s)'),
    stopTimeout: duration('how long it may take to stop (default 10s)'),
    tls: bool('served over TLS on a certificate the study makes'),
    socket: bool('measured over a unix socket'),
    cpus: CPUS,
    ...CREDENTIALS,
  },
  command: {
    command: { shape: { kind: 'textOrList' }, doc: 'a command that starts the server; {port} in it becomes a free port' },
    host: text('where it listens (default 127.0.0.1)'),
    port: PORT,
    cwd: text('its working directory (default the study file\'s)'),
    env: { shape: { kind: 'names' }, doc: 'environment variables for it' },
    readyTimeout: duration('how long the server may take to start (default 10s)'),
    stopTimeout: duration('how long it may take to stop (default 5s)'),
    cpus: CPUS,
    ...CREDENTIALS,
  },
  embedded: { embedded: { shape: { kind: 'true' }, doc: "respbench's demo server on a free port" } },
  address: { address: text('HOST:PORT of a server already running'), tls: TLS_OF_ADDRESS, cluster: bool('a seed of a Redis Cluster (measured with --cluster)'), ...CREDENTIALS },
  uri: { uri: text('redis://[user[:pass]@]host[:port][/db] or redis+cluster://…'), ...CREDENTIALS },
  port: { host: text('the server\'s host (default 127.0.0.1)'), port: PORT, tls: TLS_OF_ADDRESS, cluster: bool('a seed of a Redis Cluster'), ...CREDENTIALS },
  socket: { socket: text('a unix socket path (relative to the study file)'), ...CREDENTIALS },
};

/** The keys of a field map, in order: what spec.ts accepts there. */
export function keysOf(fields: Fields): string[] {
  return Object.keys(fields);
}

/** The duration grammar as a JSON Schema pattern (`0`, or a number with a unit). */
export const DURATION_PATTERN = `^(0|\\d+(\\.\\d+)?(${Object.keys(DURATION_UNITS_NS).join('|')}))$`;
