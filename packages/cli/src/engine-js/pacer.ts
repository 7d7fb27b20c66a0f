/**
 * When the next request is due: now (closed loop), on a schedule (--rate),
 * and when the connections of a ramp open (--ramp-connections). Owns time
 * only: it never touches a socket or a counter. Paired with
 * crates/respbench-core/src/pacer.rs.
 */
import { performance } from 'node:perf_hooks';
import type { Alarm } from './alarm.js';
import type { LatencyHistogram } from './histogram.js';
import { rampOpenAtMs, type Plan } from './plan.js';
import type { Phase } from './progress.js';

/** When a client may send: a deadline for time-bound phases (--duration, --warmup) and a schedule for --rate. */
export interface Pace {
  /** performance.now() after which no request is sent; Infinity for a counted phase. */
  deadline: number;
  /** --rate: ms between two of this client's requests (1000 × connections / rate); 0 sends as fast as replies allow. */
  intervalMs: number;
  /** --rate: ms into the schedule of this client's first request (1000 × id / rate), so clients do not fire together. */
  offsetMs: number;
}

/** A time-bound phase's length in ms; 0 when a request count bounds it. */
export function phaseDurationMs(plan: Plan, phase: Phase): number {
  return phase === 'warmup' ? plan.warmupMs : phase === 'run' ? plan.durationMs : 0;
}

/** How client `id` of a phase starting at `start` may send. */
export function paceFor(plan: Plan, phase: Phase, id: number, start: number): Pace {
  const durationMs = phaseDurationMs(plan, phase);
  const rate = phase === 'preload' ? 0 : plan.rate;
  return {
    deadline: durationMs > 0 ? start + durationMs : Infinity,
    intervalMs: rate > 0 ? (1000 * plan.connections) / rate : 0,
    offsetMs: rate > 0 ? (1000 * id) / rate : 0,
  };
}

/**
 * One client's --rate schedule: request k of its stream is due at
 * start + offset + k × interval; its latency counts from then, and how late
 * it went out is recorded (the schedule-lag histogram).
 */
export class Schedule {
  private startedAt = 0;

  constructor(
    readonly pace: Pace,
    private readonly lag: LatencyHistogram | null,
  ) {}

  start(now: number): void {
    this.startedAt = now;
  }

  /** Requests of the stream due by `now` (how many may have been sent). */
  dueBy(now: number): number {
    return Math.floor((now - this.startedAt - this.pace.offsetMs) / this.pace.intervalMs) + 1;
  }

  /** When request `k` (0-based) of the stream is due. */
  dueAt(k: number): number {
    return this.startedAt + this.pace.offsetMs + k * this.pace.intervalMs;
  }

  /** When request `ordinal` was due, its lateness at `now` recorded. */
  intendedFor(ordinal: number, now: number): number {
    const due = this.dueAt(ordinal);
    this.lag?.record((now - due) * 1e6);
    return due;
  }
}

/** What the Pacer wakes: a client, by its index in the phase. */
export interface Wakeable {
  readonly pacerIndex: number;
  onDue(): void;
}

/**
 * --rate: wakes a phase's clients when their next request is due. One alarm
 * serves every client (as the native engine's loop serves its
 * connections): it is set for the earliest due time, and its ring is one
 * turn that wakes every client due by then, each of which sends everything
 * it has due. Between due times the event loop sleeps (replies are read
 * when they come); a client already due when it asks (the engine fell
 * behind) gets a turn after the event loop's next poll (setImmediate), not
 * the alarm's. Why an alarm thread and not Node's timers: alarm.ts.
 */
export class Pacer {
  /** Clients waiting for a due time, in no order. */
  private readonly waiting: Wakeable[] = [];
  /** Each waiting client's due time, by its pacer index; Infinity when not waiting. */
  private readonly dueAt: Float64Array;
  /** When the alarm is set to ring; Infinity when it is not set. */
  private alarmAt = Infinity;
  private immediate: NodeJS.Immediate | null = null;
  /** The turn a client was last woken in, by its pacer index: one that asks again in its own turn waits for the next. */
  private readonly wokenIn: Uint32Array;
  private turn = 0;

  /** `clients`: how many the phase has (the largest pacer index + 1). */
  constructor(
    clients: number,
    private readonly alarm: Alarm,
    /** The clock (performance.now, or a test's). */
    private readonly now: () => number = () => performance.now(),
  ) {
    this.dueAt = new Float64Array(clients).fill(Infinity);
    this.wokenIn = new Uint32Array(clients);
  }

  /** Calls `c.onDue()` at `when` (the clock's time) or as soon after as the event loop allows. */
  wake(c: Wakeable, when: number): void {
    const due = this.dueAt[c.pacerIndex];
    if (due === Infinity) this.waiting.push(c);
    if (when < due) this.dueAt[c.pacerIndex] = when;
    this.arm(when);
  }

  /** A client that ended waits no more; with none left, nothing keeps the event loop alive. */
  forget(c: Wakeable): void {
    if (this.dueAt[c.pacerIndex] === Infinity) return;
    this.dueAt[c.pacerIndex] = Infinity;
    const i = this.waiting.indexOf(c);
    this.waiting[i] = this.waiting[this.waiting.length - 1];
    this.waiting.pop();
    if (this.waiting.length === 0) this.disarm();
  }

  /** Clients waiting now (for tests). */
  get waitingCount(): number {
    return this.waiting.length;
  }

  /** The phase is over: the alarm's thread ends. */
  close(): void {
    this.disarm();
    this.alarm.close();
  }

  private arm(when: number): void {
    // A turn is coming: it sets the alarm for what is still waiting after it.
    if (this.immediate !== null) return;
    if (when <= this.now()) {
      this.immediate = setImmediate(this.onTurn);
      return;
    }
    // An earlier ring is set already: its turn sets the alarm again.
    if (when >= this.alarmAt) return;
    this.alarmAt = when;
    this.alarm.set(when, this.onRing);
  }

  private disarm(): void {
    if (this.alarmAt !== Infinity) this.alarm.clear();
    if (this.immediate !== null) clearImmediate(this.immediate);
    this.immediate = null;
    this.alarmAt = Infinity;
  }

  private readonly onRing = (): void => {
    this.alarmAt = Infinity;
    this.onTurn();
  };

  private readonly onTurn = (): void => {
    this.immediate = null;
    const now = this.now();
    const waiting = this.waiting;
    const turn = (this.turn = (this.turn + 1) >>> 0 || 1);
    let next = Infinity;
    for (let i = 0; i < waiting.length; ) {
      const c = waiting[i];
      const due = this.dueAt[c.pacerIndex];
      // Woken in this turn already and due again (it could send nothing): the next turn, after the
      // event loop has polled (replies read, signals heard), never a loop inside this one.
      if (due > now || this.wokenIn[c.pacerIndex] === turn) {
        if (due < next) next = due;
        i++;
        continue;
      }
      // Out of the list before its turn: the turn may ask for the next wake-up.
      this.dueAt[c.pacerIndex] = Infinity;
      waiting[i] = waiting[waiting.length - 1];
      waiting.pop();
      this.wokenIn[c.pacerIndex] = turn;
      c.onDue();
    }
    if (next !== Infinity) this.arm(next);
  };
}

/** --ramp-connections: the clients opened together `atMs` after the phase's start. */
export interface RampStep {
  atMs: number;
  ids: number[];
}

/**
 * The later steps of a ramp: the clients `[from, first + count)` grouped by
 * when they open (rampOpenAtMs). A step due at or after the phase's end
 * (`durationMs`) is listed with `atMs` ≥ durationMs: it never opens.
 */
export function rampSteps(ramp: Plan['rampConnections'], from: number, first: number, count: number): RampStep[] {
  const steps: RampStep[] = [];
  for (let n = from; n < count; ) {
    const atMs = rampOpenAtMs(ramp, first + n);
    let last = n;
    while (last < count && rampOpenAtMs(ramp, first + last) === atMs) last++;
    steps.push({ atMs, ids: Array.from({ length: last - n }, (_, k) => first + n + k) });
    n = last;
  }
  return steps;
}
