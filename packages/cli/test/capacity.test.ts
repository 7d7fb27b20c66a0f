/** respbench capacity, without a server: the SLO grammar, the search, the limit verdict, the driver over a fake engine, the outputs. */
import { describe, expect, it } from 'vitest';
import { parsePrecision } from '../src/capacity/settings.js';
import { assignLimits, runCapacity, type CapacityReport } from '../src/capacity/driver.js';
import { answerLine, capacityPage, limitLine, stepRow, tableHeader } from '../src/capacity/output.js';
import { stallShares, ThreadStallMeter } from '../src/capacity/machine-stalls.js';
import { CapacitySearch } from '../src/capacity/search.js';
import { describeSlo, parseSlo } from '../src/capacity/slo.js';
import { decideLimit, type CapacityStep } from '../src/capacity/step.js';
import { LatencyHistogram } from '../src/engine-js/histogram.js';
import type { Engine, Plan, RawResult } from '../src/engine-js/plan.js';
import { planOf, rawResult } from './fixtures.js';

describe('--slo', () => {
  it('reads percentiles, units and an error bound, in any order', () => {
    const slo = parseSlo('p99.9<=5ms, p99<=1ms,errors<=0.1%');
    expect(slo.latency).toEqual([
      { percentile: 99, name: 'p99', maxUs: 1000 },
      { percentile: 99.9, name: 'p99.9', maxUs: 5000 },
    ]);
    expect(slo.maxErrorShare).toBeCloseTo(0.001);
    expect(parseSlo('p50<=200us').latency[0].maxUs).toBe(200);
    expect(parseSlo('p100<=2s').latency[0].maxUs).toBe(2_000_000);
    expect(describeSlo(parseSlo('p99<=1ms'))).toBe('p99 <= 1 ms, errors <= 0% (default)');
    expect(describeSlo(slo)).toBe('p99 <= 1 ms, p99.9 <= 5 ms, errors <= 0.1%');
  });

  it('refuses what it cannot read, naming it', () => {
    expect(() => parseSlo('p99<1ms')).toThrow(/cannot read "p99<1ms"/);
    expect(() => parseSlo('p99<=1')).toThrow(/--slo takes conditions like 'p99<=1ms'/);
    expect(() => parseSlo('errors<=1%')).toThrow(/at least one latency condition/);
    expect(() => parseSlo('p0<=1ms')).toThrow(/above 0 and at most 100/);
    expect(() => parseSlo('p101<=1ms')).toThrow(/above 0 and at most 100/);
    expect(() => parseSlo('p99<=1ms,p99<=2ms')).toThrow(/p99 given twice/);
    expect(() => parseSlo('')).toThrow(/no condition/);
  });

  it('--precision is a percentage', () => {
    expect(parsePrecision('5%')).toBeCloseTo(0.05);
    expect(parsePrecision('2.5')).toBeCloseTo(0.025);
    expect(() => parsePrecision('0%')).toThrow(/--precision/);
    expect(() => parsePrecision('100%')).toThrow(/--precision/);
  });
});

/** Runs the search against a server that meets the SLO up to `capacity`; returns the rates tried and the bracket. */
function search(startRate: number, capacity: number, precision = 0.05) {
  const s = new CapacitySearch({ startRate, precision, minRate: Math.max(1, startRate / 64) });
  const tried: number[] = [];
  for (let rate = s.next(); rate !== null && tried.length < 100; rate = s.next()) {
    tried.push(rate);
    s.record(rate, rate <= capacity);
  }
  return { tried, bracket: s.bracket(), end: s.end() };
}

describe('the search', () => {
  it('ramps up ×2, then bisects until the bracket is within the precision', () => {
    const { tried, bracket, end } = search(500, 5000);
    expect(tried.slice(0, 5)).toEqual([500, 1000, 2000, 4000, 8000]);
    expect(tried[5]).toBe(6000);
    expect(end).toBe('converged');
    expect(bracket.met!).toBeLessThanOrEqual(5000);
    expect(bracket.failed!).toBeGreaterThan(5000);
    expect((bracket.failed! - bracket.met!) / bracket.met!).toBeLessThanOrEqual(0.05);
    expect(bracket.met!).toBeGreaterThan(5000 * 0.95);
  });

  it('finds the capacity within the precision from any start', () => {
    for (const [start, cap] of [
      [1, 123_456],
      [10_000, 300],
      [333, 334],
      [50_000, 49_999],
    ]) {
      const { bracket, end } = search(start, cap, 0.02);
      expect(end).toBe('converged');
      expect(bracket.met!).toBeLessThanOrEqual(cap);
      expect(bracket.met!).toBeGreaterThanOrEqual(cap / 1.02 - 1);
    }
  });

  it('ramps down from a start rate that fails, and gives up below the floor', () => {
    const down = search(8000, 1500);
    expect(down.tried.slice(0, 4)).toEqual([8000, 4000, 2000, 1000]);
    const none = search(800, 0);
    expect(none.end).toBe('none-met');
    expect(none.bracket).toEqual({ met: null, failed: 12.5 });
  });

  it('stops at the highest rate the engines take', () => {
    const s = new CapacitySearch({ startRate: 40_000_000, precision: 0.05 });
    expect(s.next()).toBe(40_000_000);
    s.record(40_000_000, true);
    expect(s.next()).toBe(80_000_000);
    s.record(80_000_000, true);
    expect(s.next()).toBe(100_000_000);
    s.record(100_000_000, true);
    expect(s.next()).toBeNull();
    expect(s.end()).toBe('ceiling');
  });
});

function step(over: Partial<CapacityStep>): CapacityStep {
  return {
    step: 1,
    targetRate: 10_000,
    achievedRate: 10_000,
    requests: 10_000,
    errors: 0,
    latencyUs: { p50: 100, p99: 300, p999: 500, max: 900 },
    sloLatencyUs: { p99: 300 },
    serviceUs: { mean: 100, p50: 90, p99: 250 },
    scheduleLagP99Us: 10,
    eventLoopDelayP99Us: null,
    clientLagBrokeSlo: false,
    clientLag: null,
    machineLate: null,
    clientCpu: 0.2,
    clientCores: 1,
    met: false,
    failedBecause: ['x'],
    failedOn: ['latency'],
    firstError: null,
    retried: false,
    limit: null,
    limitReason: null,
    heldBack: false,
    ...over,
  };
}

describe('who was the limit', () => {
  const window = { connections: 8, pipeline: 1 };

  it('the server, when its service time grew: requests queued there', () => {
    const d = decideLimit(step({ achievedRate: 5000, serviceUs: { mean: 1600, p50: 1600, p99: 2000 } }), 250, window);
    expect(d.limit).toBe('server');
    expect(d.reason).toMatch(/requests queued at the server: service time .* mean 250 us at the least loaded step, 1.6 ms here/);
  });

  it('the client, when it used all the CPU it can', () => {
    const d = decideLimit(step({ clientCpu: 0.97, serviceUs: { mean: 1600, p50: 1600, p99: 2000 } }), 250, window);
    expect(d).toEqual({ limit: 'client', reason: 'the client used 97% of the CPU it can use (1 core)' });
  });

  it("the client, when the JS engine's event loop ran late by a good part of the latency", () => {
    const d = decideLimit(step({ eventLoopDelayP99Us: 8000, latencyUs: { p50: 900, p99: 12_000, p999: 20_000, max: 30_000 }, sloLatencyUs: { p99: 12_000 } }), 100, window);
    expect(d.limit).toBe('client');
    expect(d.reason).toMatch(/event loop ran up to 8 ms late/);
  });

  it('the client, when its window (-c × -P) cannot carry the rate at the service time the server kept', () => {
    // One connection, one request in flight, a server answering in 100 us: at most ~10k/s, asked 200k/s.
    const d = decideLimit(step({ targetRate: 200_000, achievedRate: 9800, serviceUs: { mean: 102, p50: 100, p99: 150 } }), 100, { connections: 1, pipeline: 1 });
    expect(d.limit).toBe('client');
    expect(d.reason).toMatch(/window of 1 request in flight \(-c 1 × -P 1\) at 100 us each \(the server's time at low load\) carries at most about 10000\/s: raise -c or -P/);
    // Even when the client's slowness made the service time look longer.
    expect(decideLimit(step({ targetRate: 200_000, achievedRate: 9800, serviceUs: { mean: 300, p50: 300, p99: 900 } }), 100, { connections: 1, pipeline: 1 }).limit).toBe('client');
    // A window that carries the rate at low load is not the limit: a server that slowed down is.
    expect(decideLimit(step({ targetRate: 6000, achievedRate: 5000, serviceUs: { mean: 1600, p50: 1600, p99: 2000 } }), 290, { connections: 8, pipeline: 1 }).limit).toBe('server');
  });

  it('--cluster: the window is -c × -P per primary (each connection has a socket, and a window, per primary)', () => {
    // One connection, one request in flight per primary, three primaries at 100 us: at most ~30k/s.
    const d = decideLimit(step({ targetRate: 200_000, achievedRate: 29_000, serviceUs: { mean: 102, p50: 100, p99: 150 } }), 100, { connections: 1, pipeline: 1, primaries: 3 });
    expect(d.limit).toBe('client');
    expect(d.reason).toMatch(/window of 3 requests in flight \(-c 1 × -P 1 × 3 primaries\) at 100 us each .* carries at most about 30000\/s/);
    // 20k/s is within three primaries' window, not one's.
    expect(decideLimit(step({ targetRate: 20_000, achievedRate: 15_000, serviceUs: { mean: 300, p50: 300, p99: 900 } }), 100, { connections: 1, pipeline: 1, primaries: 3 }).limit).toBe('server');
  });

  it("the client's window, when every request was in flight at the step's own service time (grown, but not by queueing at the server)", () => {
    // Three in flight (-c 1 × 3 primaries) at 59.6 us carry ~50k/s; asked 60k/s, 50k/s achieved, late sends: the
    // window's lag, not the machine holding an idle client back (a CI run said that, and no capacity).
    const full = step({ targetRate: 60_000, achievedRate: 50_162, scheduleLagP99Us: 170_000, serviceUs: { mean: 59.55, p50: 50, p99: 150 }, latencyUs: { p50: 106_000, p99: 170_263, p999: 175_000, max: 180_000 }, sloLatencyUs: { p99: 170_263 }, clientCpu: 0.28 });
    const d = decideLimit(full, 48.63, { connections: 1, pipeline: 1, primaries: 3 });
    expect([d.limit, d.heldBack ?? false]).toEqual(['client', false]);
    expect(d.reason).toMatch(/window of 3 requests in flight \(-c 1 × -P 1 × 3 primaries\) was full: at 59\.55 us each \(this step's service time, 48\.63 us at the least loaded step\) it carries at most about 50378\/s, 100% of it used: raise -c or -P/);
    // A window that could carry the rate but was kept 82% busy (JS, 3 in flight at 194.5 us, 12.6k/s of 15k/s) is full too.
    const busy = decideLimit({ ...full, targetRate: 15_000, achievedRate: 12_620, serviceUs: { mean: 194.5, p50: 180, p99: 400 } }, 151, { connections: 1, pipeline: 1, primaries: 3 });
    expect([busy.limit, busy.heldBack ?? false]).toEqual(['client', false]);
    expect(busy.reason).toMatch(/was full: .* carries at most about 15424\/s, 82% of it used/);
    // The same lag with room in the window (30k/s asked, 20k/s achieved: 40% of it used) is the client's own lateness.
    const late = decideLimit({ ...full, targetRate: 30_000, achievedRate: 20_000 }, 48.63, { connections: 1, pipeline: 1, primaries: 3 });
    expect([late.limit, late.heldBack]).toEqual(['client', true]);
  });

  it('the client, when requests went out late with the server as fast as ever; the server when they went out on time', () => {
    const late = decideLimit(step({ scheduleLagP99Us: 5000, latencyUs: { p50: 100, p99: 5200, p999: 6000, max: 7000 }, sloLatencyUs: { p99: 5200 } }), 100, window);
    expect(late.limit).toBe('client');
    expect(late.reason).toMatch(/went out late \(schedule lag p99 5 ms\)/);
    // Late with its CPU mostly idle (20%): held back by the machine, so the step says nothing of the server; busy (80%): its own work.
    expect(late.heldBack).toBe(true);
    expect(late.reason).toMatch(/client CPU 20%: the client, idle most of the step, was held back by the machine/);
    // The same idle, late client with a stall meter that saw a quiet machine: it waited on replies, not the CPU.
    const quiet = decideLimit(step({ machineLate: [0], scheduleLagP99Us: 5000, latencyUs: { p50: 100, p99: 5200, p999: 6000, max: 7000 }, sloLatencyUs: { p99: 5200 } }), 100, window);
    expect([quiet.limit, quiet.heldBack ?? false]).toEqual(['server', false]);
    expect(quiet.reason).toMatch(/client idle \(CPU 20%\) and the machine quiet/);
    // A meter that saw the machine hold its sleeper back for 0.5% of the step: held back.
    expect(decideLimit(step({ machineLate: [0.005], scheduleLagP99Us: 5000, latencyUs: { p50: 100, p99: 5200, p999: 6000, max: 7000 }, sloLatencyUs: { p99: 5200 } }), 100, window).heldBack).toBe(true);
    const busy = decideLimit(step({ clientCpu: 0.8, scheduleLagP99Us: 5000, latencyUs: { p50: 100, p99: 5200, p999: 6000, max: 7000 }, sloLatencyUs: { p99: 5200 } }), 100, window);
    expect([busy.limit, busy.heldBack]).toEqual(['client', false]);
    const onTime = decideLimit(step({ scheduleLagP99Us: 20, serviceUs: { mean: 120, p50: 90, p99: 4000 }, latencyUs: { p50: 100, p99: 4000, p999: 6000, max: 7000 }, sloLatencyUs: { p99: 4000 } }), 100, window);
    expect(onTime.limit).toBe('server');
    expect(onTime.reason).toMatch(/the server's own latency broke the SLO/);
  });

  it('the server, when only its error replies broke the SLO', () => {
    const d = decideLimit(step({ failedOn: ['errors'], errors: 12, firstError: 'ERR unknown command', clientCpu: 0.99 }), 100, window);
    expect(d).toEqual({ limit: 'server', reason: 'it answered 12 requests with error replies (first: ERR unknown command)' });
  });

  it('the server, when its error replies broke the SLO and the step also missed its rate (no latency bound missed)', () => {
    const d = decideLimit(step({ failedOn: ['errors', 'rate'], errors: 2, firstError: 'ERR bad ID', clientCpu: 0.32, scheduleLagP99Us: 394 }), 100, window);
    expect(d).toEqual({ limit: 'server', reason: 'it answered 2 requests with error replies (first: ERR bad ID)' });
    // A latency bound missed too is looked into as before.
    expect(decideLimit(step({ failedOn: ['errors', 'latency'], errors: 2, clientCpu: 0.99 }), 100, window).limit).toBe('client');
  });

  it('assignLimits measures against the least loaded step, met steps get none', () => {
    const steps = [
      step({ step: 1, targetRate: 1000, met: true, failedBecause: [], serviceUs: { mean: 200, p50: 200, p99: 300 } }),
      step({ step: 2, targetRate: 8000, achievedRate: 5000, serviceUs: { mean: 1600, p50: 1600, p99: 2000 } }),
    ];
    assignLimits(steps, window);
    expect(steps[0].limit).toBeNull();
    expect(steps[1].limit).toBe('server');
  });
});

/** A server of capacity `capacity` ops/s as an Engine: open-loop runs achieve min(rate, capacity), with latency that explodes beyond it. */
/**
 * fakeEngine(capacity), but from 2000/s on 0.6% of the sends go out 50 ms late (the rest 20 us) and
 * `lateReplies(requests, stalled)` of the latencies are 50 ms (the rest 0.5 ms).
 */
function stallingFrom2000(capacity: number, lateReplies: (requests: number, stalled: number) => number): Engine & { plans: Plan[] } {
  const engine = fakeEngine(capacity);
  const run = engine.run.bind(engine);
  engine.run = async (plan, o) => {
    const raw = await run(plan, o);
    if (plan.rate < 2000) return raw;
    const stalled = Math.round(raw.requests * 0.006);
    const late = lateReplies(raw.requests, stalled);
    const lag = new LatencyHistogram();
    lag.recordCount(20_000, raw.requests - stalled);
    lag.recordCount(50_000_000, stalled);
    const latency = new LatencyHistogram();
    latency.recordCount(500_000, raw.requests - late);
    latency.recordCount(50_000_000, late);
    return { ...raw, histogram: latency.toData(), scheduleLagHistogram: lag.toData() };
  };
  return engine;
}

function fakeEngine(capacity: number, onRun?: (plan: Plan, n: number) => void, lagNs = 20_000): Engine & { plans: Plan[] } {
  const plans: Plan[] = [];
  return {
    name: 'native',
    plans,
    async run(plan: Plan, options = {}): Promise<RawResult> {
      plans.push(plan);
      onRun?.(plan, plans.length);
      // Idle for a while, as a client waiting on a server is (the driver measures the client's CPU share:
      // the work after the run, summaries and JIT, must stay well under it even on a busy machine).
      await new Promise((r) => setTimeout(r, 50));
      if (options.signal?.aborted) return rawResult({ requests: 0, failure: { kind: 'interrupted', message: 'interrupted' } });
      const seconds = plan.durationMs / 1000;
      const rate = plan.rate > 0 ? Math.min(plan.rate, capacity) : capacity;
      const requests = Math.round(rate * seconds);
      const latencyNs = plan.rate > capacity ? 200_000_000 : 500_000;
      const h = new LatencyHistogram();
      h.recordCount(latencyNs, requests);
      const service = new LatencyHistogram();
      service.recordCount(plan.rate > capacity ? 1_600_000 : 200_000, requests);
      // A client that keeps its schedule: its requests go out within 20 us of their time.
      const lag = new LatencyHistogram();
      lag.recordCount(lagNs, requests);
      return rawResult({ engine: 'native', requests, ok: requests, sets: requests, gets: 0, elapsedNs: seconds * 1e9, histogram: h.toData(), serviceHistogram: plan.rate > 0 ? service.toData() : null, scheduleLagHistogram: plan.rate > 0 ? lag.toData() : null });
    },
  };
}

/** fakeEngine(5000) whose requests, from 2000/s on, go out `lateNs` late and are answered that late (the client's lag, not the server's). */
function lateFrom2000(lateNs: number): Engine & { plans: Plan[] } {
  const engine = fakeEngine(5000);
  const run = engine.run.bind(engine);
  engine.run = async (plan, o) => {
    const raw = await run(plan, o);
    if (plan.rate < 2000) return raw;
    const late = new LatencyHistogram();
    late.recordCount(lateNs, raw.requests);
    return { ...raw, histogram: late.toData(), scheduleLagHistogram: late.toData() };
  };
  return engine;
}

const SETTINGS = { slo: parseSlo('p99<=20ms'), startRate: null, stepDurationMs: 1000, warmupMs: 100, precision: 0.05, probeMs: 500, retry: true };

describe('the driver', () => {
  it('probes closed loop, starts at 10% of it, and finds the capacity within the precision, one whole run per step', async () => {
    const engine = fakeEngine(5000);
    const plan = { ...planOf(['--mode', 'get', '-c', '8', '-P', '1']), preload: true };
    const r = await runCapacity(engine, plan, SETTINGS);
    expect(r.probe?.opsPerSec).toBe(5000);
    expect(r.startRate).toBe(500);
    expect(r.end).toBe('converged');
    expect(r.capacity!).toBeGreaterThanOrEqual(4750);
    expect(r.capacity!).toBeLessThanOrEqual(5000);
    expect(r.limit?.by).toBe('server');
    // The probe is closed loop; every step is open loop at its rate, warmed up, time-bound; get mode preloads once.
    expect(engine.plans[0]).toMatchObject({ rate: 0, durationMs: 500, warmupMs: 0, preload: true });
    expect(engine.plans.slice(1).map((p) => p.rate)).toEqual(r.steps.map((s) => s.targetRate));
    for (const p of engine.plans.slice(1)) expect(p).toMatchObject({ durationMs: 1000, warmupMs: 100, preload: false });
    // Where the SLO should be monotone, it is: every rate up to the capacity met it, every one above did not.
    for (const s of r.steps) expect(s.met).toBe(s.targetRate <= r.capacity!);
  });

  it('a step that kept its rate but broke the SLO runs once more; only the repeat counts', async () => {
    const engine = fakeEngine(5000);
    const run = engine.run.bind(engine);
    let spoiled = 0;
    engine.run = async (plan, o) => {
      const raw = await run(plan, o);
      // One pause of the machine in the first try at 2000/s: the rate kept, the p99 broken.
      if (plan.rate === 2000 && spoiled++ === 0) {
        const h = new LatencyHistogram();
        h.recordCount(500_000, raw.requests - 100);
        h.recordCount(80_000_000, 100);
        return { ...raw, histogram: h.toData() };
      }
      return raw;
    };
    const r = await runCapacity(engine, planOf([]), SETTINGS);
    const at2000 = r.steps.filter((s) => s.targetRate === 2000);
    expect(at2000.map((s) => [s.met, s.retried])).toEqual([
      [false, true],
      [true, false],
    ]);
    expect(r.capacity!).toBeGreaterThanOrEqual(4750);
    // Only steps that kept their rate are run again, each right away; far past the capacity the rate is not kept, believed at once.
    r.steps.forEach((s, i) => {
      if (s.retried) expect([s.achievedRate >= 0.95 * s.targetRate, r.steps[i + 1].targetRate]).toEqual([true, s.targetRate]);
      if (s.achievedRate < 0.95 * s.targetRate) expect(s.retried).toBe(false);
    });
    expect(r.steps.some((s) => !s.met && !s.retried && s.achievedRate < 0.95 * s.targetRate)).toBe(true);
    const noRetry = await runCapacity(fakeEngine(5000), planOf([]), { ...SETTINGS, retry: false });
    expect(noRetry.steps.some((s) => s.retried)).toBe(false);
  });

  it('an abort stops the search with the bracket so far', async () => {
    const controller = new AbortController();
    const engine = fakeEngine(5000, (_p, n) => n === 4 && controller.abort());
    const r = await runCapacity(engine, planOf([]), SETTINGS, { signal: controller.signal });
    expect(r.end).toBe('interrupted');
    expect(r.steps.map((s) => s.targetRate)).toEqual([500, 1000]);
    expect(r.bracket).toEqual({ met: 1000, failed: null });
    expect(answerLine({ ...r, interrupted: { signal: 'SIGINT' } }, SETTINGS.slo)).toBe('interrupted (SIGINT): bracket so far: met 1000/s, failed none yet');
  });

  it('a step whose client lag alone broke the SLO runs again; a capacity resting on one is not printed', async () => {
    // A busy machine: from 2000/s on, requests go out 50 ms late (the SLO is 20 ms) and the server is never what queues.
    const engine = lateFrom2000(50_000_000);
    const r = await runCapacity(engine, planOf(['-c', '8', '-P', '1']), SETTINGS);
    const at2000 = r.steps.filter((s) => s.targetRate === 2000);
    expect(at2000.map((s) => [s.clientLagBrokeSlo, s.retried])).toEqual([
      [true, true],
      [true, true],
      [true, false],
    ]);
    expect(r.end).toBe('client-lag');
    expect(r.capacity).toBeNull();
    expect(r.limit?.by).toBe('client');
    expect(r.limit?.reason).toMatch(/^the client's own stalls broke the SLO: 100% of the requests went out more than 20 ms late, which alone is past what p99 <= 20 ms allows: the client or the machine it runs on fell behind, not the server/);
    expect(answerLine(r, SETTINGS.slo)).toMatch(/^capacity: not measured: the lowest rate that failed \(\d+\/s\) failed on the client's own lag or the machine's stalls, not the server/);
    // Past its capacity a server whose window is full makes requests late too: that lag is the server's.
    const full = fakeEngine(5000, undefined, 50_000_000);
    const honest = await runCapacity(full, planOf(['-c', '8', '-P', '1']), SETTINGS);
    expect([honest.end, honest.limit?.by]).toEqual(['converged', 'server']);
  });

  it('a bound under a millisecond that half the sends miss on their own is said to be tighter than the client can time its sends, not a busy machine', async () => {
    // Every request goes out 20 us late (the client's wake-ups) and is answered in 0.5 ms: p99 <= 10 us cannot be met.
    const tight = await runCapacity(fakeEngine(5000), planOf(['-c', '8', '-P', '1']), { ...SETTINGS, slo: parseSlo('p99<=10us') });
    expect(tight.end).toBe('client-lag');
    expect(tight.steps.every((s) => !s.met)).toBe(true);
    // The same at any try: no step is run again.
    expect(tight.steps.filter((s) => s.retried)).toEqual([]);
    expect(tight.limit?.reason).toMatch(/^p99 <= 10 us is tighter than the client can time its sends: half of them went out more than 20(\.\d+)? us late \(its own wake-ups\), so no rate can meet it; loosen --slo: not the server; client CPU \d+%$/);
    expect(tight.failure).toMatch(/^no capacity measured: p99 <= 10 us is tighter than the client can time its sends/);
    expect(tight.failure).not.toMatch(/quieter machine/);
    expect(answerLine(tight, parseSlo('p99<=10us'))).toMatch(/^capacity: not measured: the lowest rate that failed \([\d.]+\/s\) the SLO is tighter than the client can time its sends \(met at none\); see the limit line$/);
    // A lower rate that met the bound shows it is within the client's timing: late sends at a higher rate are load's.
    const loaded = lateFrom2000(700_000);
    const sub = await runCapacity(loaded, planOf(['-c', '8', '-P', '1']), { ...SETTINGS, slo: parseSlo('p99<=600us') });
    expect(sub.steps.some((s) => s.met)).toBe(true);
    expect(sub.steps.every((s) => s.clientLag?.tighterThanSendsUs === undefined)).toBe(true);
    expect(sub.limit?.reason).not.toMatch(/tighter than the client/);
    // Sends 5 us late meet the bound's share: the 0.5 ms latency is the server's, and no rate met it.
    const server = await runCapacity(fakeEngine(5000, undefined, 5_000), planOf(['-c', '8', '-P', '1']), { ...SETTINGS, slo: parseSlo('p99<=10us') });
    expect([server.end, server.limit?.by]).toEqual(['none-met', 'server']);
    // Sends late by a millisecond or more are stalls, whatever the bound: the client's, with the old advice.
    const stalled = await runCapacity(fakeEngine(5000, undefined, 2_000_000), planOf(['-c', '8', '-P', '1']), { ...SETTINGS, slo: parseSlo('p99<=400us') });
    const verdict = stalled.steps.find((s) => s.clientLag !== null)?.clientLag;
    expect(verdict).toMatchObject({ by: 'schedule lag', boundUs: 400 });
    expect(verdict?.tighterThanSendsUs).toBeUndefined();
    expect(stalled.failure).toMatch(/the client's own stalls broke the SLO: .*run it on a quieter machine/);
  });

  it("stalls of the client that make 0.6% of sends later than the bound (their p99 under it) break a p99 alone: the replies that came during them were read as late", async () => {
    // From 2000/s on the client stalls: 0.6% of requests go out 50 ms late (the SLO is p99 <= 20 ms), and as many replies
    // are read 50 ms late, so 1.2% of latencies are past 50 ms, while the server answers in 0.5 ms as at low load.
    const engine = stallingFrom2000(5000, (_requests, stalled) => 2 * stalled);
    const r = await runCapacity(engine, planOf(['-c', '8', '-P', '1']), SETTINGS);
    const first = r.steps.find((s) => s.targetRate === 2000)!;
    expect(first.scheduleLagP99Us).toBeLessThan(20_000);
    expect([first.met, first.clientLagBrokeSlo]).toEqual([false, true]);
    // Without the 1.2% the stalls delayed, the rest met p99 <= 20 ms.
    expect(first.clientLag).toEqual({ by: 'schedule lag', percentile: 99, boundUs: 20_000, figure: expect.closeTo(0.006, 3), withoutUs: expect.any(Number) });
    expect(first.clientLag!.withoutUs!).toBeLessThanOrEqual(20_000);
    expect(r.end).toBe('client-lag');
    expect(r.capacity).toBeNull();
    expect(r.limit?.reason).toMatch(/^the client's own stalls broke the SLO: 0\.[56]\d*% of the requests went out more than 20 ms late, and as many replies were read as late; the other requests met p99 <= 20 ms/);
    // Stalls as rare, with the server's own latency past the bound for 5% of the requests: the server's.
    const slowServer = stallingFrom2000(5000, (requests) => Math.round(requests * 0.05));
    const server = await runCapacity(slowServer, planOf(['-c', '8', '-P', '1']), SETTINGS);
    expect([server.end, server.limit?.by, server.steps.find((s) => s.targetRate === 2000)?.clientLag]).toEqual(['converged', 'server', null]);
  });

  it("a server starved by a busy machine fills the window (which reads as the server's), but the machine's stalls say whose the step was: run again, then no capacity", async () => {
    // From 2000/s on, other work on the machine holds its threads back: the server (on it) falls behind, its replies take
    // 4 ms, the 8 requests in flight are always out (the window is full, so the client's late sends are the server's
    // doing), and a sleeping thread wakes more than 20 ms late for 3% of each step.
    let measuredUs = 0;
    let pastBoundUs = 0;
    const machine = { read: () => [pastBoundUs, measuredUs], close: () => {} };
    const engine = fakeEngine(5000);
    const run = engine.run.bind(engine);
    engine.run = async (plan, o) => {
      const raw = await run(plan, o);
      measuredUs += plan.durationMs * 1000;
      if (plan.rate < 2000) return raw;
      pastBoundUs += plan.durationMs * 1000 * 0.03;
      const requests = Math.round(0.9 * raw.requests);
      const slow = new LatencyHistogram();
      slow.recordCount(4_000_000, requests);
      const late = new LatencyHistogram();
      late.recordCount(100_000_000, requests);
      return { ...raw, requests, ok: requests, sets: requests, histogram: late.toData(), serviceHistogram: slow.toData(), scheduleLagHistogram: late.toData() };
    };
    const r = await runCapacity(engine, planOf(['-c', '8', '-P', '1']), SETTINGS, { stallMeter: machine });
    const at2000 = r.steps.filter((s) => s.targetRate === 2000);
    expect(at2000.map((s) => [s.clientLag?.by, s.clientLag?.figure, s.retried])).toEqual([
      ['machine', 0.03, true],
      ['machine', 0.03, true],
      ['machine', 0.03, false],
    ]);
    expect(r.end).toBe('client-lag');
    expect(r.capacity).toBeNull();
    expect(r.limit?.reason).toMatch(/^the client's own stalls broke the SLO: a sleeping thread of the client woke more than 20 ms late for 3(\.0+)?% of the step \(the machine held its threads back; a server on it too\), which alone is past what p99 <= 20 ms allows/);
    // The same server on a quiet machine: the full window at 2000/s is the server's, and its capacity is printed.
    measuredUs = pastBoundUs = 0;
    const quiet = { read: () => [0, (measuredUs += 1e6)], close: () => {} };
    const honest = await runCapacity(engine, planOf(['-c', '8', '-P', '1']), SETTINGS, { stallMeter: quiet });
    expect([honest.end, honest.limit?.by]).toEqual(['converged', 'server']);
  });

  it("the machine's stall meter: a sleeping thread's time measured, and the share of it past each bound", async () => {
    const meter = await ThreadStallMeter.open([20_000, 0]);
    expect(meter).not.toBeNull();
    try {
      const before = meter!.read();
      await new Promise((r) => setTimeout(r, 60));
      const after = meter!.read();
      expect(after[2] - before[2]).toBeGreaterThanOrEqual(40_000);
      const shares = stallShares(before, after)!;
      expect(shares).toHaveLength(2);
      // Every wake is later than 0 µs past its 1 ms, by something; the 20 ms bound is passed by less.
      expect(shares[1]).toBeGreaterThan(0);
      expect(shares[0]).toBeLessThanOrEqual(shares[1]);
      expect(shares[1]).toBeLessThan(1);
    } finally {
      meter!.close();
    }
  });

  it("the baseline service time is the least loaded step's that the stalls did not decide", () => {
    const stalled = step({ step: 1, targetRate: 400, met: false, clientLagBrokeSlo: true, serviceUs: { mean: 2600, p50: 180, p99: 15_000 } });
    const clean = step({ step: 2, targetRate: 800, met: true, failedBecause: [], failedOn: [], serviceUs: { mean: 200, p50: 190, p99: 400 } });
    const high = step({ step: 3, targetRate: 4000, achievedRate: 3900, serviceUs: { mean: 1000, p50: 900, p99: 3000 }, latencyUs: { p50: 900, p99: 30_000, p999: 40_000, max: 50_000 }, sloLatencyUs: { p99: 30_000 } });
    assignLimits([stalled, clean, high], { connections: 8, pipeline: 1 });
    // 8 in flight at 200 us carry 40000/s: not the window (at the stalled step's 2.6 ms they would carry 3077/s); the server queued.
    expect(high.limitReason).toMatch(/^requests queued at the server: service time \(reply − actual send\) mean 200 us at the least loaded step/);
  });

  it('a step that cannot run ends the search as failed, saying why', async () => {
    const engine = fakeEngine(5000);
    const run = engine.run.bind(engine);
    engine.run = async (plan, o) => (plan.rate > 1500 ? rawResult({ requests: 0, failure: { kind: 'closed', message: 'connection closed by server' } }) : run(plan, o));
    const r = await runCapacity(engine, planOf([]), SETTINGS);
    expect(r.end).toBe('failed');
    expect(r.failure).toBe('the step at 2000/s failed: connection closed by server');
    expect(r.bracket.met).toBe(1000);
  });
});

describe('what it prints', () => {
  async function report(): Promise<CapacityReport> {
    return runCapacity(fakeEngine(5000), planOf(['-c', '8', '-P', '1']), { ...SETTINGS, slo: parseSlo('p90<=20ms,p99<=20ms') });
  }

  it('a row per step, the answer with its bracket, the limit', async () => {
    const r = await report();
    const slo = parseSlo('p90<=20ms,p99<=20ms');
    expect(tableHeader(slo).trim().split(/\s{2,}/)).toEqual(['step', 'target/s', 'achieved/s', 'p50 ms', 'p90 ms', 'p99 ms', 'p99.9 ms', 'errors', 'met']);
    const failed = r.steps.find((s) => !s.met)!;
    expect(stepRow(failed, slo)).toMatch(/ no {2}p90 200(\.\d+)? ms > 20 ms; p99 200(\.\d+)? ms > 20 ms; achieved 5000\/s, \d+% of the target$/);
    expect(answerLine(r, slo)).toMatch(/^capacity: \d+ ops\/s with p90 <= 20 ms, p99 <= 20 ms, errors <= 0% \(default\) \(met at \d+\/s, failed at \d+\/s: within [\d.]+%\)$/);
    expect(limitLine(r)).toMatch(/^limit at \d+\/s: the server; requests queued at the server/);
  });

  it('--html: the chart with the SLO line and the capacity, and the table', async () => {
    const r = await report();
    const html = capacityPage(r, parseSlo('p90<=20ms,p99<=20ms'));
    expect(html).toMatch(/^<!doctype html>/);
    expect(html).toContain('<svg class="chart capacity"');
    expect(html).toContain('SLO p99 ≤ 20 ms');
    expect(html).toContain(`capacity ${r.capacity!.toLocaleString('en-US')}/s`);
    // The chart shows the steps the search went by (not a try that was run again); the table shows every one.
    expect(html.match(/<circle class="point" data-series="p99"/g)).toHaveLength(r.steps.filter((s) => !s.retried).length);
    expect(html.match(/<tr>/g)).toHaveLength(r.steps.length + 1);
    expect(html).not.toMatch(/NaN|undefined|Infinity/);
  });
});

describe('respbench capacity: usage', () => {
  async function cli(args: string[]) {
    const { main } = await import('../src/cli.js');
    let stdout = '';
    let stderr = '';
    const io = { stdout: (t: string) => void (stdout += t), stderr: (t: string) => void (stderr += t), stderrIsTty: false };
    // Port 1 with nothing listening: a case that slipped through would exit 1, not 2.
    const code = await main(['capacity', '--port', '1', '--engine', 'js', ...args], io);
    return { code, stdout, stderr };
  }

  it.each([
    [[], /capacity needs --slo, e\.g\. --slo 'p99<=1ms'/],
    [['--slo', 'p99<1ms'], /--slo takes conditions like/],
    [['--slo', 'p99<=1ms', '--rate', '1000'], /use --start-rate and --step-duration instead of --rate/],
    [['--slo', 'p99<=1ms', '--duration', '5s'], /instead of --duration/],
    [['--slo', 'p99<=1ms', '-n', '5'], /instead of -n\/--requests/],
    [['--slo', 'p99<=1ms', '--precision', '0'], /--precision/],
    [['--slo', 'p99<=1ms', '--start-rate', 'fast'], /--start-rate must be a number/],
    [['--slo', 'p99<=1ms', '--step-duration', '0'], /--step-duration must be a duration/],
    [['--slo', 'p99<=1ms', '-P', '0'], /--pipeline/],
  ])('%j: one line, exit 2', async (args, message) => {
    const r = await cli(args as string[]);
    const lines = r.stderr.split('\n').filter((l) => l.length > 0);
    expect({ code: r.code, lines: lines.length, stdout: r.stdout }).toEqual({ code: 2, lines: 1, stdout: '' });
    expect(lines[0]).toMatch(/^respbench: /);
    expect(lines[0]).toMatch(message);
  });

  it('a server that is not there: the search stops, says why, exit 1', async () => {
    const r = await cli(['--slo', 'p99<=1ms', '--step-duration', '100ms', '--warmup', '0']);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/^respbench capacity · engine js · target 127\.0\.0\.1:1$/m);
    expect(r.stdout).toMatch(/^stopped: bracket so far: met none yet, failed none yet$/m);
    expect(r.stderr).toMatch(/^respbench: the closed-loop probe failed: .*(refused|ECONNREFUSED)/m);
  });
});
