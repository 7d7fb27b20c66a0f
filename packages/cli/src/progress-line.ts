/**
 * Live progress on stderr while a run goes: the phase, done %, ops/s now,
 * p99 so far, errors so far and the time left. Only when stderr is a
 * terminal and not --quiet/--json; a single line rewritten in place, cleared
 * before the result is printed.
 */
import type { ProgressSnapshot } from './engine-js/progress.js';

/** `1m 05s`, `12s`, `0.4s`: a short time for the progress line. */
export function shortDuration(seconds: number): string {
  if (!Number.isFinite(seconds) || seconds < 0) return '?';
  if (seconds < 10) return `${seconds.toFixed(1)}s`;
  if (seconds < 60) return `${Math.round(seconds)}s`;
  const whole = Math.round(seconds);
  const h = Math.floor(whole / 3600);
  const m = Math.floor((whole % 3600) / 60);
  const s = whole % 60;
  return h > 0 ? `${h}h ${String(m).padStart(2, '0')}m` : `${m}m ${String(s).padStart(2, '0')}s`;
}

/**
 * The text of one progress line. `rate` is ops/s over the last interval;
 * the time left comes from the duration (--duration, --warmup) or from the
 * requests still to go at the rate so far.
 */
export function progressText(p: ProgressSnapshot, rate: number): string {
  const fraction = p.total > 0 ? p.done / p.total : p.durationNs ? p.elapsedNs / p.durationNs : 0;
  const pct = (100 * Math.min(1, fraction)).toFixed(1);
  const label = p.phase === 'run' ? 'running' : p.phase;
  const elapsedSec = p.elapsedNs / 1e9;
  let left: number | null = null;
  if (p.durationNs) left = Math.max(0, (p.durationNs - p.elapsedNs) / 1e9);
  else if (p.total > 0 && p.done > 0) left = ((p.total - p.done) * elapsedSec) / p.done;
  const parts = [`${label}: ${pct}%`, `${Math.round(rate)} ops/s`];
  if (p.p99Ns !== undefined && p.p99Ns > 0) parts.push(`p99 ${p.p99Ns < 1e6 ? `${(p.p99Ns / 1e3).toFixed(1)} us` : `${(p.p99Ns / 1e6).toFixed(1)} ms`}`);
  parts.push(`errors ${p.errors}`, left === null ? `${shortDuration(elapsedSec)} elapsed` : `${shortDuration(left)} left`);
  return parts.join(' · ');
}

export class ProgressLine {
  private lastDone = 0;
  private lastNs = 0;
  private lastPhase: string | null = null;
  private shown = false;

  constructor(
    private readonly io: { stderr: (t: string) => void },
    readonly enabled: boolean,
  ) {}

  update(p: ProgressSnapshot): void {
    if (!this.enabled) return;
    if (p.elapsedNs < 1e9 && !this.shown) return;
    // A new phase (or a new suite test) starts its counts from zero.
    if (p.phase !== this.lastPhase || p.done < this.lastDone || p.elapsedNs < this.lastNs) {
      this.lastDone = 0;
      this.lastNs = 0;
      this.lastPhase = p.phase;
    }
    const dt = (p.elapsedNs - this.lastNs) / 1e9;
    const rate = dt > 0 ? (p.done - this.lastDone) / dt : 0;
    this.lastDone = p.done;
    this.lastNs = p.elapsedNs;
    this.io.stderr(`\r\x1b[2K${progressText(p, rate)}`);
    this.shown = true;
  }

  clear(): void {
    if (this.shown) this.io.stderr('\r\x1b[2K');
    this.shown = false;
  }
}
