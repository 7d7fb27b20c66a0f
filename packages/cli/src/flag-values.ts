/**
 * One flag value at a time, parsed strictly: a bad value becomes a
 * UsageError naming the flag and what it accepts. Combinations of flags are
 * validate.ts's.
 */
import { LIMITS } from './engine-js/limits.js';
import { shownQuoted } from './printable.js';
import { UsageError } from './usage-error.js';

/** A value the user gave, quoted and with control/invisible characters escaped. */
export function shown(raw: unknown): string {
  return shownQuoted(String(raw));
}

/** Text whose UTF-8 bytes go on the wire must have them: a lone surrogate (from a JSON/YAML escape) has none. */
export function parseText(flag: string, raw: unknown): string {
  const text = String(raw);
  if (/[\uD800-\uDFFF]/u.test(text)) throw new UsageError(`${flag} is not valid Unicode text: it holds a lone surrogate (got ${shown(raw)})`);
  return text;
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

/** At most this many --percentiles: columns enough for a terminal. */
export const MAX_PERCENTILES = 10;

/** `--percentiles 50,90,99,99.9,99.99`: each above 0 and at most 100, ascending order kept as asked, no repeats. */
export function parsePercentiles(raw: string): number[] {
  const parts = String(raw).split(',').map((p) => p.trim());
  const values = parts.map((p) => (/^\d+(\.\d+)?$/.test(p) ? Number(p) : NaN));
  const bad = parts.find((_, i) => !(values[i] > 0 && values[i] <= 100));
  if (bad !== undefined || parts.length === 0) {
    throw new UsageError(`--percentiles must be a comma-separated list of numbers above 0 and at most 100, e.g. 50,90,99,99.9,99.99 (got ${shown(bad ?? raw)})`);
  }
  if (new Set(values).size !== values.length) throw new UsageError(`--percentiles lists a percentile twice (got ${shown(raw)})`);
  if (values.length > MAX_PERCENTILES) throw new UsageError(`--percentiles takes at most ${MAX_PERCENTILES} percentiles (got ${values.length})`);
  return values.slice().sort((a, b) => a - b);
}

/**
 * The one duration grammar of every flag and file field that takes a time
 * (--timeout, --duration, --warmup, --interval, --ramp-connections' every,
 * --reconnect-backoff, --service-time, --slo's bounds, --step-duration, a
 * study's durations): a number and a unit, `us` (or `µs`), `ms`, `s`, `m`
 * or `h`. A bare number is refused — `--timeout 5` read as seconds while
 * `--service-time 5` was refused — except `0` where zero is allowed.
 */
export const DURATION_UNITS_NS = { us: 1e3, µs: 1e3, ms: 1e6, s: 1e9, m: 60e9, h: 3600e9 } as const;

/** How messages say the grammar. */
export const DURATION_FORMS = 'a number with a unit us, ms, s, m or h (e.g. 500us, 10ms, 2s, 5m)';

export interface DurationLimits {
  /** Whether 0 is allowed (it turns the thing off). */
  allowZero: boolean;
  /** The largest value, in ns (default 24 h). */
  maxNs?: number;
  /** The finest step the flag keeps, in ns: a value above 0 below it is refused, others are rounded to it (default 1 ns). */
  resolutionNs?: number;
}

const DAY_NS = 24 * 3600e9;

/** A duration in ns (rounded to the flag's resolution), or a UsageError naming the flag and the grammar. */
export function parseDurationNs(flag: string, raw: unknown, limits: DurationLimits): number {
  const { allowZero, maxNs = DAY_NS, resolutionNs = 1 } = limits;
  const text = String(raw).trim();
  const m = /^(\d+(?:\.\d+)?)(us|µs|ms|s|m|h)$/.exec(text);
  const exactNs = m ? Number(m[1]) * DURATION_UNITS_NS[m[2] as keyof typeof DURATION_UNITS_NS] : text === '0' ? 0 : NaN;
  const bound = `up to ${formatDurationNs(maxNs)}${allowZero ? ' (0 turns it off)' : ', more than 0'}`;
  if (/^\d+(\.\d+)?$/.test(text) && text !== '0') {
    throw new UsageError(`${flag} must be a duration, ${DURATION_FORMS}: a bare number has no unit; write ${text}s or ${text}ms (got ${shown(raw)})`);
  }
  if (!Number.isFinite(exactNs) || exactNs > maxNs || (exactNs === 0 && !allowZero)) {
    throw new UsageError(`${flag} must be a duration, ${DURATION_FORMS}, ${bound} (got ${shown(raw)})`);
  }
  // Below the resolution a value would round to 0 and silently mean "off" (or nothing).
  if (exactNs > 0 && exactNs < resolutionNs) {
    throw new UsageError(`${flag} is counted in steps of ${formatDurationNs(resolutionNs)}: it must be ${allowZero ? '0 or ' : ''}at least ${formatDurationNs(resolutionNs)} (got ${shown(raw)})`);
  }
  return Math.round(exactNs / resolutionNs) * resolutionNs;
}

/** A duration in whole milliseconds (what the Plan and both engines count in). */
export function parseDurationMs(flag: string, raw: unknown, allowZero: boolean, maxMs = DAY_NS / 1e6): number {
  return parseDurationNs(flag, raw, { allowZero, maxNs: maxMs * 1e6, resolutionNs: 1e6 }) / 1e6;
}

/** `1ms`, `24h`, `500us`: the largest whole unit (for messages). */
export function formatDurationNs(ns: number): string {
  for (const [unit, size] of [['h', 3600e9], ['m', 60e9], ['s', 1e9], ['ms', 1e6], ['us', 1e3]] as const) {
    if (ns >= size && ns % size === 0) return `${ns / size}${unit}`;
  }
  return `${ns / 1e3}us`;
}

/** -s/--socket: a path, or null. Whether a server listens there is found out when connecting. */
export function parseSocket(raw: unknown): string | null {
  if (raw === undefined || raw === null) return null;
  const text = String(raw);
  if (text.trim().length === 0) throw new UsageError(`-s/--socket must be the path of a unix socket (got ${shown(raw)})`);
  return checkSocketPath(text, '-s/--socket');
}

/** The longest unix socket path a connect takes: sun_path holds 108 bytes on Linux, its last a NUL. */
export const MAX_SOCKET_PATH_BYTES = 107;

/**
 * A unix socket path the kernel can connect to (whichever engine connects):
 * a longer one is refused here with the limit, not found "missing" later.
 */
export function checkSocketPath(path: string, what: string): string {
  const bytes = Buffer.byteLength(path, 'utf8');
  if (bytes > MAX_SOCKET_PATH_BYTES) {
    throw new UsageError(`${what}: a unix socket path is at most ${MAX_SOCKET_PATH_BYTES} bytes (the kernel's sun_path holds 108, the last a NUL; got ${bytes} bytes): use a shorter path, e.g. a symlink to its directory`);
  }
  return path;
}
