/**
 * Study progress on stderr: where the study is (scenario i/N, mode, round
 * r/R), how fast the current run goes, how long the study has run and about
 * how long it has left. On a terminal a live line is rewritten in place; every
 * finished run also leaves one permanent line, which is all a log file gets.
 */
import type { ProgressSnapshot } from '../engine-js/progress.js';
import { printable } from '../printable.js';

export interface RunPosition {
  scenarioIndex: number;
  scenarioCount: number;
  label: string;
  mode: string;
  round: number;
  rounds: number;
}

export function clock(sec: number): string {
  const s = Math.max(0, Math.round(sec));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const ss = String(s % 60).padStart(2, '0');
  return h > 0 ? `${h}:${String(m).padStart(2, '0')}:${ss}` : `${m}:${ss}`;
}

export class StudyProgress {
  private readonly startedMs = Date.now();
  private runsDone = 0;
  private currentFraction = 0;
  private lastDone = 0;
  private lastNs = 0;
  private live = false;

  constructor(
    private readonly io: { stderr: (t: string) => void },
    private runsPlanned: number,
    /** Live line (a terminal, not --quiet). */
    private readonly liveEnabled: boolean,
    /** Permanent lines (not --quiet). */
    private readonly linesEnabled: boolean,
  ) {}

  private where(p: RunPosition): string {
    return `scenario ${p.scenarioIndex}/${p.scenarioCount} ${printable(p.label)} · ${p.mode} · round ${p.round}/${p.rounds}`;
  }

  private times(): string {
    const elapsed = (Date.now() - this.startedMs) / 1000;
    const units = this.runsDone + this.currentFraction;
    const left = units > 0 ? (elapsed / units) * (this.runsPlanned - units) : null;
    return `elapsed ${clock(elapsed)} · left ${left === null ? '?' : `~${clock(left)}`}`;
  }

  private clearLive(): void {
    if (this.live) this.io.stderr('\r\x1b[2K');
    this.live = false;
  }

  /** A line that stays (scenario starting, a failure). */
  note(text: string): void {
    if (!this.linesEnabled) return;
    this.clearLive();
    this.io.stderr(`${printable(text)}\n`);
  }

  runStarted(): void {
    this.currentFraction = 0;
    this.lastDone = 0;
    this.lastNs = 0;
  }

  update(pos: RunPosition, p: ProgressSnapshot): void {
    if (p.phase === 'run' && p.total > 0) this.currentFraction = Math.min(0.99, p.done / p.total);
    if (!this.liveEnabled) return;
    const dt = (p.elapsedNs - this.lastNs) / 1e9;
    if (dt < 0.25 && this.live) return;
    const rate = dt > 0 && p.done >= this.lastDone ? (p.done - this.lastDone) / dt : 0;
    this.lastDone = p.done;
    this.lastNs = p.elapsedNs;
    const now = p.phase === 'preload' ? `preload ${p.total > 0 ? Math.round((100 * p.done) / p.total) : 0}%` : `${Math.round(rate)} ops/s · ${p.total > 0 ? Math.round((100 * p.done) / p.total) : 0}%`;
    // Longer than the terminal, the line would wrap and \r could no longer rewrite it.
    const width = process.stderr.columns ?? 0;
    const line = `${this.where(pos)} · ${now} · ${this.times()}`;
    this.io.stderr(`\r\x1b[2K${width > 10 && line.length >= width ? `${line.slice(0, width - 2)}…` : line}`);
    this.live = true;
  }

  /**
   * A run finished: one permanent line. A failure is said even with --quiet,
   * as an error line of its own.
   */
  runFinished(pos: RunPosition, summary: string, failure: string | null = null): void {
    this.runsDone++;
    this.currentFraction = 0;
    if (this.linesEnabled) this.note(`${this.where(pos)} · ${failure ?? summary} · ${this.times()}`);
    else if (failure) this.io.stderr(`respbench: ${this.where(pos)}: ${printable(failure)}\n`);
  }

  /** Runs that will not happen (their scenario's target did not start). */
  skipped(count: number): void {
    this.runsPlanned -= count;
  }

  clear(): void {
    this.clearLive();
  }
}
