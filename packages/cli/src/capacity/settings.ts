/**
 * What the capacity command line (command.ts) and the search it starts
 * (action.ts, and a capacity study) share: the flags, their defaults and
 * --precision's reading. Kept apart so the lazily loaded search does not
 * import the module that loads it.
 */
import { parsePositive } from '../flag-values.js';
import type { RawRunOptions } from '../validate.js';

export interface CapacityFlags extends RawRunOptions {
  slo?: string;
  startRate?: string;
  stepDuration: string;
  precision: string;
  json: boolean;
  /** --pretty: the JSON indented (one line without). */
  pretty?: boolean;
  html?: string;
  quiet: boolean;
  retry: boolean;
}

/** Warmup before each step when --warmup is not given. */
export const DEFAULT_WARMUP_MS = 1000;
/** The closed-loop probe is this long at most (and never longer than a step). */
export const PROBE_MS = 2000;

/** `5%` or `5` (percent): a share, 0 < share < 1. */
export function parsePrecision(raw: string): number {
  const text = String(raw).trim().replace(/%$/, '');
  return parsePositive('--precision (in %)', text, 99) / 100;
}
