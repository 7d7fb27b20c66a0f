/**
 * The Pacer's alarm clock under --rate: a thread that sleeps until the time
 * asked for and then wakes the event loop, so a request due in 50 µs goes
 * out within tens of µs of it while the event loop sleeps until then.
 *
 * Why a thread: Node's timers count whole milliseconds (libuv's loop time
 * and epoll's timeout both do), so a setTimeout cannot wake the loop on time
 * for a schedule finer than that. Polling the loop (setImmediate) until the
 * due time can, but above ~1,000 requests/s it polls all the time: a core
 * busy, and a busy process is the one the kernel's scheduler preempts for a
 * whole time slice (milliseconds) whenever anything else wants the core —
 * that was the JS engine's schedule lag (p99 of milliseconds at --rate
 * 20000, where the native engine, which sleeps in epoll, had tens of µs).
 * Atomics.wait takes a timeout in fractions of a millisecond (a futex wait,
 * to the kernel's timer slack of ~50 µs), and a message from the thread
 * wakes the loop at once (libuv's async handle). A process that sleeps is
 * woken on time by the scheduler.
 *
 * The native engine needs none of this: its epoll wait is its own thread's.
 */
import { performance } from 'node:perf_hooks';
import type { MessagePort } from 'node:worker_threads';
import { startEvalThread, type EvalThread } from './eval-thread.js';

/** What the Pacer asks of an alarm clock (a fake in unit tests). */
export interface Alarm {
  /** Calls `ring` once, at `when` (performance.now()'s clock) or as soon after as the thread and the event loop allow; replaces an alarm set before. */
  set(when: number, ring: () => void): void;
  /** No ring until the next set. */
  clear(): void;
  /** The thread ends; nothing rings again. */
  close(): void;
}

/** Int32 slots of the shared state: bumped on every change of the alarm, and the stop flag. */
const SEQ = 0;
const STOP = 1;
/** Bytes: the two Int32 slots, then one Float64, the time to ring at. */
const SHARED_BYTES = 16;

/**
 * The thread's whole body, run from its source text (a Worker with
 * `eval`), so it needs no file of its own next to the compiled one or the
 * test's. It touches only globals and its two arguments (so the slots are
 * numbers here: 0 is SEQ, 1 is STOP, the Float64 after them the ring time).
 *
 * The ring time is on the process's monotonic clock (process.hrtime), which
 * every thread shares, and the thread reads that clock alone: converting it
 * to its own performance.now() at start was off by up to 1.5 ms (a first
 * call's lazy set-up falls between the two reads), so alarms rang that much
 * late, or early over and over (a ring, nothing due, set again, a ring).
 * A ring carries the sequence number of the alarm it is for: one the main
 * thread has replaced since is ignored there.
 */
function alarmThread(shared: SharedArrayBuffer, port: MessagePort): void {
  const state = new Int32Array(shared, 0, 2);
  const ringAt = new Float64Array(shared, 8, 1);
  for (;;) {
    const seq = Atomics.load(state, 0);
    if (Atomics.load(state, 1) !== 0) return;
    const wait = ringAt[0] - Number(process.hrtime.bigint()) / 1e6;
    // Sleeps until the time comes or the alarm changes (Infinity: until it is set).
    if (wait > 0) {
      Atomics.wait(state, 0, seq, wait);
      continue;
    }
    port.postMessage(seq);
    Atomics.wait(state, 0, seq);
  }
}

const monotonicMs = (): number => Number(process.hrtime.bigint()) / 1e6;

/**
 * performance.now() + this = process.hrtime in ms, to about a µs: of several
 * reads of performance.now() each between two of hrtime, the one bracketed
 * tightest (the first reads may be slow: lazy set-up).
 */
export function monotonicOffset(): number {
  let offset = 0;
  let bracket = Infinity;
  for (let i = 0; i < 16; i++) {
    const before = monotonicMs();
    const now = performance.now();
    const after = monotonicMs();
    if (after - before < bracket) {
      bracket = after - before;
      offset = (before + after) / 2 - now;
    }
  }
  return offset;
}

/** The Alarm as a thread; `open` resolves once it runs. */
export class ThreadAlarm implements Alarm {
  private readonly state: Int32Array;
  private readonly ringAt: Float64Array;
  /** performance.now() + this: the process's monotonic clock in ms (process.hrtime). */
  private readonly toMonotonic: number;
  private seq = 0;
  private ring: (() => void) | null = null;
  private closed = false;
  private ended: Promise<void> = Promise.resolve();
  private thread: EvalThread | null = null;
  /** The thread failed mid-run: a timer (to the millisecond) rings instead, so no request waits forever. */
  private lost = false;
  private timer: NodeJS.Timeout | null = null;

  private constructor(shared: SharedArrayBuffer) {
    this.state = new Int32Array(shared, 0, 2);
    this.ringAt = new Float64Array(shared, 8, 1);
    this.ringAt[0] = Infinity;
    this.toMonotonic = monotonicOffset();
  }

  /** Starts the thread (some tens of ms: before a phase's clock starts). */
  static async open(): Promise<ThreadAlarm> {
    const shared = new SharedArrayBuffer(SHARED_BYTES);
    const alarm = new ThreadAlarm(shared);
    try {
      alarm.thread = await startEvalThread(alarmThread as (data: never, port: MessagePort) => void, shared, (why) => alarm.onLost(why));
    } catch (err) {
      alarm.closed = true;
      throw new Error(`--rate: the pacing thread failed: ${(err as Error).message}`);
    }
    alarm.thread.worker.on('message', alarm.onRing);
    return alarm;
  }

  /** The thread is gone mid-run: said once, and what was due rings from a timer. */
  private onLost(why: string): void {
    if (this.closed) return;
    this.lost = true;
    process.stderr.write(`respbench: the --rate pacing thread stopped (${why}); timers pace the rest of the run, to the millisecond\n`);
    const ring = this.ring;
    if (ring !== null) this.set(this.ringAt[0] - this.toMonotonic, ring);
  }

  set(when: number, ring: () => void): void {
    if (this.closed) return;
    this.ring = ring;
    this.ringAt[0] = when + this.toMonotonic;
    if (this.lost) {
      if (this.timer !== null) clearTimeout(this.timer);
      this.timer = null;
      this.ringByTimer(when);
      return;
    }
    this.changed();
  }

  /**
   * A timer counts from libuv's loop time, which is read once per turn of
   * the event loop and may be milliseconds old when the timer is set: it can
   * fire before `when`. Early is the one thing an alarm may not be (a paced
   * request would go out before it is due), so it checks and waits again.
   */
  private ringByTimer(when: number): void {
    const seq = this.seq;
    const left = when - performance.now();
    if (left <= 0) {
      this.timer = setTimeout(() => this.onRing(seq), 0);
      return;
    }
    this.timer = setTimeout(() => {
      if (performance.now() >= when) this.onRing(seq);
      else this.ringByTimer(when);
    }, left);
  }

  clear(): void {
    this.ring = null;
    this.ringAt[0] = Infinity;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    this.changed();
  }

  /** Resolves when the thread has ended. */
  close(): Promise<void> {
    if (!this.closed) {
      this.closed = true;
      this.ring = null;
      if (this.timer !== null) clearTimeout(this.timer);
      Atomics.store(this.state, STOP, 1);
      this.changed();
      this.ended = this.thread?.stop() ?? Promise.resolve();
    }
    return this.ended;
  }

  /** Tells the thread: it wakes and reads the new ring time. */
  private changed(): void {
    this.seq = (Atomics.add(this.state, SEQ, 1) + 1) | 0;
    Atomics.notify(this.state, SEQ);
  }

  private readonly onRing = (seq: number): void => {
    if (seq !== this.seq || this.ring === null) return;
    const ring = this.ring;
    this.ring = null;
    ring();
  };
}
