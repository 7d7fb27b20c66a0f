/**
 * Live progress on stderr while a run goes: ops/s now, done %, errors so far.
 * Only when stderr is a terminal and not --quiet/--json; a single line
 * rewritten in place, cleared before the result is printed.
 */
import type { ProgressSnapshot } from './engine-js/progress.js';

export class ProgressLine {
  private lastDone = 0;
  private lastNs = 0;
  private shown = false;

  constructor(
    private readonly io: { stderr: (t: string) => void },
    private readonly enabled: boolean,
  ) {}

  update(p: ProgressSnapshot): void {
    if (!this.enabled) return;
    if (p.elapsedNs < 1e9 && !this.shown) return;
    const dt = (p.elapsedNs - this.lastNs) / 1e9;
    const rate = dt > 0 && p.done >= this.lastDone ? (p.done - this.lastDone) / dt : 0;
    this.lastDone = p.done;
    this.lastNs = p.elapsedNs;
    const fraction = p.total > 0 ? p.done / p.total : p.durationNs ? p.elapsedNs / p.durationNs : 0;
    const pct = (100 * Math.min(1, fraction)).toFixed(1);
    const label = p.phase === 'run' ? 'running' : p.phase;
    this.io.stderr(`\r\x1b[2K${label}: ${pct}% · ${Math.round(rate)} ops/s · errors ${p.errors} · ${(p.elapsedNs / 1e9).toFixed(1)} s`);
    this.shown = true;
  }

  clear(): void {
    if (this.shown) this.io.stderr('\r\x1b[2K');
    this.shown = false;
  }
}
