/**
 * How much a busy machine held back the threads on it during a capacity
 * step, measured apart from the engine: a thread that sleeps 1 ms at a time
 * and notes how late it wakes (what cyclictest does). The engine's own lag
 * cannot always say it: when the machine starves a server on it, the
 * server's replies come slowly, the window fills, and every late send looks
 * like the server's doing (a full window is the server's). A thread that
 * only sleeps is late only when the machine had no CPU for it, and a server
 * on the same machine, which also sleeps between requests, waits as long.
 *
 * For each SLO bound b the thread adds up, over the step, how long a
 * sleeper would have been later than b (a wake L late: L − b when L > b):
 * its share of the step's time is the share of requests due, or of replies
 * arriving, while the machine held its threads back by more than b.
 * Lateness counts from the thread's own least lateness so far (the
 * kernel's timer slack and a wake-up, 50-100 µs on an idle machine), not
 * from zero: every wake is that late, held back or not, and counted from
 * zero a bound of 50 µs would find an idle machine stalled all the time.
 */
import { startEvalThread, type EvalThread } from '../engine-js/eval-thread.js';
import type { Slo } from './slo.js';

/** What the search reads of the machine (a fake in unit tests). */
export interface StallMeter {
  /** Per bound given at the start: µs a sleeper would have been later than it, and (last) µs measured in all; since the start. */
  read(): number[];
  close(): void;
}

/**
 * The thread's body, run from its source text (as the Pacer's alarm in
 * engine-js/alarm.ts): globals and its arguments only. `totals[i]` is bound
 * i's µs past it; the last one the µs measured; `stop[0]` ends it.
 */
function stallThread(data: { shared: SharedArrayBuffer; boundsUs: number[] }): void {
  const { shared, boundsUs } = data;
  const clock = globalThis.performance;
  const stop = new Int32Array(shared, 0, 1);
  const totals = new BigInt64Array(shared, 8, boundsUs.length + 1);
  const SLEEP_MS = 1;
  let floorUs = Infinity;
  let before = clock.now();
  while (Atomics.load(stop, 0) === 0) {
    Atomics.wait(stop, 0, 0, SLEEP_MS);
    const now = clock.now();
    const rawUs = (now - before - SLEEP_MS) * 1000;
    if (rawUs < floorUs) floorUs = rawUs;
    const lateUs = rawUs - floorUs;
    for (let i = 0; i < boundsUs.length; i++) if (lateUs > boundsUs[i]) Atomics.add(totals, i, BigInt(Math.round(lateUs - boundsUs[i])));
    Atomics.add(totals, boundsUs.length, BigInt(Math.round((now - before) * 1000)));
    before = now;
  }
}

/** The StallMeter as a thread, for the SLO's latency bounds (µs). */
export class ThreadStallMeter implements StallMeter {
  private readonly stop: Int32Array;
  private readonly totals: BigInt64Array;

  private constructor(
    private readonly thread: EvalThread,
    shared: SharedArrayBuffer,
    bounds: number,
  ) {
    this.stop = new Int32Array(shared, 0, 1);
    this.totals = new BigInt64Array(shared, 8, bounds + 1);
  }

  /** Starts the thread; null when it cannot start (the search then goes by the engine's lag alone). A thread lost mid-search stops counting: its shares read as not measured. */
  static async open(boundsUs: number[]): Promise<ThreadStallMeter | null> {
    const shared = new SharedArrayBuffer(8 + 8 * (boundsUs.length + 1));
    try {
      const thread = await startEvalThread(stallThread as (data: never) => void, { shared, boundsUs }, () => {});
      return new ThreadStallMeter(thread, shared, boundsUs.length);
    } catch {
      return null;
    }
  }

  read(): number[] {
    return Array.from({ length: this.totals.length }, (_, i) => Number(Atomics.load(this.totals, i)));
  }

  close(): void {
    Atomics.store(this.stop, 0, 1);
    Atomics.notify(this.stop, 0);
    void this.thread.stop();
  }
}

/** Between two reads of a meter: per bound, the share of the time measured that a sleeper was later than it. */
export function stallShares(before: number[], after: number[]): number[] | null {
  const measured = after[after.length - 1] - before[before.length - 1];
  if (!(measured > 0)) return null;
  return after.slice(0, -1).map((us, i) => (us - before[i]) / measured);
}

/** Runs `search` with a ThreadStallMeter for the SLO's latency bounds (none when it cannot start), closed after. */
export async function withStallMeter<T>(slo: Slo, search: (meter: StallMeter | null) => Promise<T>): Promise<T> {
  const meter = await ThreadStallMeter.open(slo.latency.map((c) => c.maxUs));
  try {
    return await search(meter);
  } finally {
    meter?.close();
  }
}
