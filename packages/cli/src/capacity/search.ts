/**
 * Which rate to try next: a geometric ramp up from the start rate while
 * steps meet the SLO, then a bisection between the highest rate that met it
 * and the lowest that did not, until the two are within the precision. A
 * start rate that already fails ramps down instead, to find a rate that
 * meets it at all. Pure: the driver (driver.ts) runs the steps and tells it
 * what they gave.
 */

export interface SearchOptions {
  startRate: number;
  /** Stop when (failed − met) / met is at most this (0.05 = 5%). */
  precision: number;
  /** Ramp factor, up and down. */
  growth?: number;
  /** The highest rate the engines take. */
  maxRate?: number;
  /** Give up ramping down below this rate. */
  minRate?: number;
}

/** The highest rate that met the SLO and the lowest that did not; null = none yet. */
export interface Bracket {
  met: number | null;
  failed: number | null;
}

export type SearchEnd =
  /** The bracket is within the precision. */
  | 'converged'
  /** Even the lowest rate tried did not meet the SLO. */
  | 'none-met'
  /** Every rate up to the highest the engines take met it. */
  | 'ceiling';

export class CapacitySearch {
  private met: number | null = null;
  private failed: number | null = null;
  private readonly growth: number;
  private readonly maxRate: number;
  private readonly minRate: number;
  private lastTried: number | null = null;

  constructor(private readonly options: SearchOptions) {
    this.growth = options.growth ?? 2;
    this.maxRate = options.maxRate ?? 100_000_000;
    this.minRate = options.minRate ?? 1;
  }

  bracket(): Bracket {
    return { met: this.met, failed: this.failed };
  }

  /** Why the search is over, or null while it goes on. */
  end(): SearchEnd | null {
    const { met, failed } = this;
    if (met !== null && failed !== null && failed - met <= this.options.precision * met) return 'converged';
    if (met === null && failed !== null && failed <= this.minRate) return 'none-met';
    if (failed === null && met !== null && met >= this.maxRate) return 'ceiling';
    return null;
  }

  /** The next rate to try (requests per second), or null when the search is over. */
  next(): number | null {
    if (this.end()) return null;
    const { met, failed } = this;
    let rate: number;
    if (met === null && failed === null) rate = this.options.startRate;
    else if (failed === null) rate = Math.min(met! * this.growth, this.maxRate);
    else if (met === null) rate = Math.max(failed / this.growth, this.minRate);
    else rate = (met + failed) / 2;
    rate = roundRate(rate);
    // Rounding may land on a rate already known: the bracket is as narrow as rates can make it.
    if (rate === this.met || rate === this.failed || rate === this.lastTried) return null;
    return rate;
  }

  /** What a step at `rate` gave. */
  record(rate: number, met: boolean): void {
    this.lastTried = rate;
    if (met) this.met = this.met === null ? rate : Math.max(this.met, rate);
    else this.failed = this.failed === null ? rate : Math.min(this.failed, rate);
    // A noisy step can contradict an earlier one (met above a failed rate): the later word wins for the bracket.
    if (this.met !== null && this.failed !== null && this.met >= this.failed) {
      if (met) this.failed = null;
      else this.met = null;
    }
  }
}

/** Rates as people read them: whole numbers from 100/s, two decimals below. */
export function roundRate(rate: number): number {
  return rate >= 100 ? Math.round(rate) : Math.round(rate * 100) / 100;
}
