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
