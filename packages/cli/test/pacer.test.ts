/**
 * The JS engine's Pacer under --rate: when it wakes its clients, and the
 * alarm thread it sleeps on. The Pacer's decisions run on a test clock and
 * a recording alarm; the thread alarm runs for real (its bounds are loose:
 * only "never early" is exact).
 */
import { performance } from 'node:perf_hooks';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { monotonicOffset, ThreadAlarm, type Alarm } from '../src/engine-js/alarm.js';
import { Pacer, type Wakeable } from '../src/engine-js/pacer.js';

/** An alarm that only records what it was asked; the test rings it. */
class RecordingAlarm implements Alarm {
  readonly sets: number[] = [];
  ring: (() => void) | null = null;
  clears = 0;
  closed = false;
  set(when: number, ring: () => void): void {
    this.sets.push(when);
    this.ring = ring;
  }
  clear(): void {
    this.clears++;
    this.ring = null;
  }
  close(): void {
    this.closed = true;
  }
  fire(): void {
    const ring = this.ring;
    this.ring = null;
    ring?.();
  }
}

function setup(clients: number) {
  let clock = 1000;
  const alarm = new RecordingAlarm();
  const pacer = new Pacer(clients, alarm, () => clock);
  const woken: number[] = [];
  const client = (pacerIndex: number, onDue: () => void = () => {}): Wakeable => ({
    pacerIndex,
    onDue: () => {
      woken.push(pacerIndex);
      onDue();
    },
  });
  return { alarm, pacer, woken, client, at: (t: number) => (clock = t) };
}

const turns = () => new Promise<void>((resolve) => setTimeout(resolve, 5));

afterEach(() => {
  vi.restoreAllMocks();
});

describe("the Pacer's wake decisions", () => {
  it('a request due in 0.3 ms: the event loop is not polled until then, the alarm is set for its due time, and its ring wakes the client', async () => {
    const polls = vi.spyOn(globalThis, 'setImmediate');
    const { alarm, pacer, woken, client, at } = setup(1);
    pacer.wake(client(0), 1000.3);
    // Before: SPIN_MS (1.25 ms) before the due time the Pacer polled with setImmediate, every loop turn.
    expect(polls).not.toHaveBeenCalled();
    expect(alarm.sets).toEqual([1000.3]);
    await turns();
    expect(woken).toEqual([]);
    at(1000.31);
    alarm.fire();
    expect(woken).toEqual([0]);
    expect(polls).not.toHaveBeenCalled();
  });

  it('one alarm for every client: set for the earliest due time; a later one does not move it, an earlier one does', () => {
    const { alarm, pacer, woken, client, at } = setup(3);
    const [c0, c1, c2] = [client(0), client(1), client(2)];
    pacer.wake(c0, 1000.2);
    pacer.wake(c1, 1000.5);
    pacer.wake(c2, 1000.1);
    expect(alarm.sets).toEqual([1000.2, 1000.1]);
    // Its ring wakes only those due by then, and sets the alarm for the next.
    at(1000.15);
    alarm.fire();
    expect(woken).toEqual([2]);
    expect(alarm.sets).toEqual([1000.2, 1000.1, 1000.2]);
    // A ring that comes late wakes everyone due by then, in one turn.
    at(1000.6);
    alarm.fire();
    expect(woken.sort()).toEqual([0, 1, 2]);
    expect(pacer.waitingCount).toBe(0);
  });

  it('a client woken in a ring that asks again sets the alarm for its next request', () => {
    const { alarm, pacer, woken, client, at } = setup(1);
    const c: Wakeable = client(0, () => pacer.wake(c, 1000.4));
    pacer.wake(c, 1000.2);
    at(1000.2);
    alarm.fire();
    expect(woken).toEqual([0]);
    expect(alarm.sets).toEqual([1000.2, 1000.4]);
  });

  it('a client already due (the engine fell behind) gets the next loop turn, not the alarm', async () => {
    const { alarm, pacer, woken, client } = setup(1);
    pacer.wake(client(0), 999);
    expect(alarm.sets).toEqual([]);
    expect(woken).toEqual([]);
    await turns();
    expect(woken).toEqual([0]);
  });

  it('a client whose turn asks again for a time already past (it could send nothing) is woken once in that turn; the next turn comes after the event loop polls', async () => {
    const { alarm, pacer, woken, client, at } = setup(2);
    let asks = 0;
    // A client that can never send (a batch all sent, waiting for its replies) and asks again each time, at most 1000 times.
    const stuck: Wakeable = client(0, () => {
      if (++asks < 1000) pacer.wake(stuck, 1000.1);
    });
    pacer.wake(stuck, 1000.1);
    pacer.wake(client(1), 1000.1);
    at(1000.2);
    alarm.fire();
    // One wake each in the ring's turn (the loop inside it spun 999 times before), the other client not starved.
    expect(woken.filter((i) => i === 0)).toHaveLength(1);
    expect(woken).toContain(1);
    let polled = false;
    setImmediate(() => (polled = true));
    await turns();
    expect(polled).toBe(true);
    expect(woken.filter((i) => i === 0).length).toBeGreaterThan(1);
    pacer.forget(stuck);
  });

  it('the last client forgotten clears the alarm; close ends it', () => {
    const { alarm, pacer, client } = setup(2);
    const [c0, c1] = [client(0), client(1)];
    pacer.wake(c0, 1000.2);
    pacer.wake(c1, 1000.3);
    pacer.forget(c0);
    expect(alarm.clears).toBe(0);
    pacer.forget(c1);
    expect(alarm.clears).toBe(1);
    pacer.close();
    expect(alarm.closed).toBe(true);
  });
});

describe('the alarm thread', () => {
  it('converts performance.now() to the monotonic clock the thread reads (process.hrtime) to within tens of µs', () => {
    const off = monotonicOffset();
    // The smallest gap of a few reads: one read may be preempted, not all of them.
    let gap = Infinity;
    for (let i = 0; i < 5; i++) {
      const now = performance.now();
      const mono = Number(process.hrtime.bigint()) / 1e6;
      gap = Math.min(gap, Math.abs(mono - (now + off)));
    }
    expect(gap).toBeLessThan(0.05);
  });

  it('rings once at or after the time asked, never before; a replaced alarm rings for the new time only; a cleared one not at all', async () => {
    const alarm = await ThreadAlarm.open();
    try {
      const ringAt = (when: number) =>
        new Promise<number>((resolve) => {
          alarm.set(when, () => resolve(performance.now()));
        });
      for (const aheadMs of [0.05, 0.3, 2]) {
        const when = performance.now() + aheadMs;
        const rang = await ringAt(when);
        expect(rang).toBeGreaterThanOrEqual(when);
        // Loose: a busy machine may hold any thread back (the exact bound is "not early").
        expect(rang - when).toBeLessThan(200);
      }
      const rings: string[] = [];
      alarm.set(performance.now() + 5, () => rings.push('first'));
      alarm.set(performance.now() + 10, () => rings.push('second'));
      await new Promise((r) => setTimeout(r, 40));
      expect(rings).toEqual(['second']);
      alarm.set(performance.now() + 5, () => rings.push('cleared'));
      alarm.clear();
      await new Promise((r) => setTimeout(r, 30));
      expect(rings).toEqual(['second']);
    } finally {
      alarm.close();
    }
  });

  it('a thread lost mid-run (it died, not closed): said once on stderr, and what was due and what is set after still ring, from timers', async () => {
    const alarm = await ThreadAlarm.open();
    const said = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    try {
      const rings: string[] = [];
      alarm.set(performance.now() + 30, () => rings.push('due'));
      // What a crash of the thread looks like from here: it ends without close().
      await (alarm as unknown as { thread: { worker: { terminate(): Promise<number> } } }).thread.worker.terminate();
      // Rings once, from a timer (within 2 s: a loaded machine may take long to end the thread).
      await vi.waitFor(() => expect(rings).toEqual(['due']), { timeout: 2000, interval: 10 });
      // This turn of the event loop busy for 10 ms first, as a loaded run's is: libuv's loop
      // time, which timers count from, is then that old when the alarm is set.
      const busyUntil = performance.now() + 10;
      while (performance.now() < busyUntil);
      const when = performance.now() + 3;
      const rang = await new Promise<number>((resolve) => alarm.set(when, () => resolve(performance.now())));
      // Never early, from a timer too.
      expect(rang).toBeGreaterThanOrEqual(when);
      const lines = said.mock.calls.map((c) => String(c[0])).filter((t) => t.includes('pacing thread'));
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(/^respbench: the --rate pacing thread stopped \(it ended \(exit code \d+\)\); timers pace the rest of the run/);
    } finally {
      said.mockRestore();
      await alarm.close();
    }
  });

  it('its thread ends on close, with an alarm still set, and rings no more', async () => {
    const alarm = await ThreadAlarm.open();
    let rang = false;
    alarm.set(performance.now() + 5, () => (rang = true));
    await alarm.close();
    await new Promise((r) => setTimeout(r, 20));
    expect(rang).toBe(false);
  });
});
