/**
 * Checking the options: every flag value is parsed strictly here, and a bad
 * one becomes a UsageError whose message names the flag and what it accepts.
 * The CLI prints that one line and exits 2.
 */
import { parseTemplate, TemplateError, unverifiableReason } from './engine-js/command.js';
import { LIMITS } from './engine-js/limits.js';
import { VERIFY_MIN_VALUE_SIZE } from './engine-js/values.js';
import type { Mode, Plan } from './engine-js/plan.js';
import { KEY_PATTERNS, type KeyPattern } from './engine-js/keys.js';

export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

/** Every mode, in the order help and messages list them. */
export const MODES = ['set', 'get', 'mixed'] as const satisfies readonly Mode[];
// Fails to compile when Plan gains a mode this list lacks.
const _allModes: readonly (typeof MODES)[number][] = [] as Mode[];
void _allModes;

export const ENGINE_CHOICES = ['auto', 'native', 'js'] as const;
export type EngineChoice = (typeof ENGINE_CHOICES)[number];

function shown(raw: unknown): string {
  return JSON.stringify(String(raw));
}

/** A whole number in [min, max], written in decimal digits only. */
export function parseInteger(flag: string, raw: unknown, [min, max]: readonly [number, number]): number {
  const text = String(raw).trim();
  const n = /^\d+$/.test(text) ? Number(text) : NaN;
  if (!Number.isSafeInteger(n) || n < min || n > max) {
    throw new UsageError(`${flag} must be a whole number from ${min} to ${max} (got ${shown(raw)})`);
  }
  return n;
}

export function parseChoice<T extends string>(flag: string, raw: unknown, choices: readonly T[]): T {
  const text = String(raw);
  if (!(choices as readonly string[]).includes(text)) {
    throw new UsageError(`${flag} must be one of ${choices.join(', ')} (got ${shown(raw)})`);
  }
  return text as T;
}

/** A number > 0 and <= max (decimals allowed). */
export function parsePositive(flag: string, raw: unknown, max: number): number {
  const text = String(raw).trim();
  const n = /^\d+(\.\d+)?$/.test(text) ? Number(text) : NaN;
  if (!Number.isFinite(n) || n <= 0 || n > max) {
    throw new UsageError(`${flag} must be a number greater than 0 and at most ${max} (got ${shown(raw)})`);
  }
  return n;
}

/** `32` or a range `32-1024`. */
export function parseValueSize(raw: unknown): { min: number; max: number } {
  const text = String(raw).trim();
  const [lo, max] = LIMITS.valueSize;
  const m = /^(\d+)(?:-(\d+))?$/.exec(text);
  const range = `--value-size must be a byte count from ${lo} to ${max}, or a range MIN-MAX within it (got ${shown(raw)})`;
  if (!m) throw new UsageError(range);
  const a = Number(m[1]);
  const b = m[2] === undefined ? a : Number(m[2]);
  if (a < lo || b > max || a > b) throw new UsageError(range);
  return { min: a, max: b };
}

/** `[::1]` → `::1`; any other host as given (trimmed). Used by --host and study targets. */
export function parseHost(raw: string): string {
  const text = raw.trim();
  const bracketed = /^\[([^\]]*)\]$/.exec(text);
  return bracketed ? bracketed[1] : text;
}

/**
 * `host:port` or `[ipv6]:port`, for --compare and a study's `address:`
 * target; `what` names the flag or key in messages.
 */
export function parseHostPort(raw: string, what: string): { host: string; port: number } {
  const text = raw.trim();
  const m = /^\[([^\]]+)\]:(\d+)$/.exec(text) ?? /^([^[\]]+):(\d+)$/.exec(text);
  if (!m) throw new UsageError(`${what} must be HOST:PORT, e.g. 127.0.0.1:6379 or [::1]:6379 (got ${shown(raw)})`);
  return { host: m[1], port: parseInteger(`${what} port`, m[2], LIMITS.port) };
}

/** Durations as `500ms`, `10s`, `2m` or a bare number of seconds. */
export function parseDurationMs(flag: string, raw: unknown, allowZero: boolean): number {
  const text = String(raw).trim();
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(text);
  const unit = m?.[2] ?? 's';
  const factor = unit === 'ms' ? 1 : unit === 's' ? 1000 : unit === 'm' ? 60_000 : 3_600_000;
  const exact = m ? Number(m[1]) * factor : NaN;
  const ms = Math.round(exact);
  const limit = 24 * 3_600_000;
  // 0.4ms must not round to 0 and so silently mean "off".
  if (!Number.isFinite(ms) || ms > limit || (exact === 0 && !allowZero) || (exact > 0 && exact < 1)) {
    throw new UsageError(`${flag} must be a duration like 500ms, 10s or 2m, up to 24h${allowZero ? ' (0 turns it off)' : ''} (got ${shown(raw)})`);
  }
  return ms;
}

/** The raw option values commander hands over (strings, booleans). */
export interface RawRunOptions {
  host: string;
  port: string;
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
  connections: string;
  keyPattern: string;
  keyStddev?: string;
  zipfExponent: string;
  threads?: string;
  engine: string;
  preload: boolean;
  timeout: string;
  duration?: string;
  warmup?: string;
  rate?: string;
}

export function defaultSeed(): number {
  return Date.now() % 4294967296 >>> 0;
}

/** Turns raw flag values into a Plan, or throws UsageError naming the flag. */
export function buildPlan(raw: RawRunOptions): { plan: Plan; engine: EngineChoice } {
  const host = parseHost(String(raw.host));
  if (host.length === 0) throw new UsageError('--host must not be empty');
  const mode = parseChoice<Mode>('--mode', raw.mode, MODES);
  const sizes = parseValueSize(raw.valueSize);
  const connections = parseInteger('-c/--connections', raw.connections, LIMITS.connections);
  const plan: Plan = {
    host,
    port: parseInteger('--port', raw.port, LIMITS.port),
    connections,
    pipeline: parseInteger('--pipeline', raw.pipeline, LIMITS.pipeline),
    requests: parseInteger('--requests', raw.requests, LIMITS.requests),
    mode,
    keyspace: parseInteger('--keyspace', raw.keyspace, LIMITS.keyspace),
    keyPattern: parseChoice<KeyPattern>('--key-pattern', raw.keyPattern, KEY_PATTERNS),
    keyStddev: raw.keyStddev === undefined ? null : parsePositive('--key-stddev', raw.keyStddev, 2 ** 48),
    zipfExponent: parsePositive('--zipf-exponent', raw.zipfExponent, 5),
    valueSizeMin: sizes.min,
    valueSizeMax: sizes.max,
    setRatio: parseInteger('--set-ratio', raw.setRatio, LIMITS.setRatio),
    setCmd: String(raw.setCmd),
    getCmd: String(raw.getCmd),
    keyPrefix: String(raw.keyPrefix),
    literalCommands: false,
    seed: raw.seed === undefined ? defaultSeed() : parseInteger('--seed', raw.seed, LIMITS.seed),
    verifyGet: Boolean(raw.verifyGet),
    preload: raw.preload !== false,
    threads: raw.threads === undefined ? 1 : parseInteger('--threads', raw.threads, LIMITS.threads),
    timeoutMs: parseDurationMs('--timeout', raw.timeout, true),
    durationMs: raw.duration === undefined ? 0 : parseDurationMs('--duration', raw.duration, false),
    warmupMs: raw.warmup === undefined ? 0 : parseDurationMs('--warmup', raw.warmup, true),
    rate: raw.rate === undefined ? 0 : parsePositive('--rate', raw.rate, 100_000_000),
  };
  checkTemplates(plan);
  const engine = parseChoice<EngineChoice>('--engine', raw.engine, ENGINE_CHOICES);
  return { plan, engine };
}

/** The command templates must parse, and reads must be verifiable when asked. */
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
  const reason = plan.verifyGet ? unverifiableReason(get) : null;
  if (reason) throw new UsageError(`--get-cmd: ${reason} with --verify-get (got ${shown(plan.getCmd)})`);
  if (plan.verifyGet && plan.valueSizeMin < VERIFY_MIN_VALUE_SIZE) throw new UsageError(verifySizeText(plan));
}

/**
 * Why --verify-get refuses small values: below 8 bytes a value holds only
 * part of its key's hash, and another key's value would often verify.
 */
export function verifySizeText(plan: Plan): string {
  const size = plan.valueSizeMin === plan.valueSizeMax ? `${plan.valueSizeMin}` : `${plan.valueSizeMin}-${plan.valueSizeMax}`;
  return `--verify-get needs values of at least ${VERIFY_MIN_VALUE_SIZE} bytes (--value-size ${VERIFY_MIN_VALUE_SIZE} or more): a shorter value holds only part of its key's hash, so another key's value could pass for it (got --value-size ${size})`;
}
