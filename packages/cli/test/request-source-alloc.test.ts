/**
 * A command mix adds no allocation per request to the JS engine's request
 * source: half a million requests of a three-command mix set off no more minor
 * garbage collections than as many of --mode mixed. (Neither is at zero:
 * the key choosers box some draws as heap numbers when V8 does not inline
 * the stream, a few minor GCs per half million requests, zipf more; the native
 * engine's tests/no_alloc.rs counts exactly zero per request.) A loop that
 * allocated one small object per request would set off many more.
 */
import { PerformanceObserver, constants } from 'node:perf_hooks';
import { describe, expect, it } from 'vitest';
import { PreparedPlan } from '../src/engine-js/request-source.js';
import type { Plan } from '../src/engine-js/plan.js';
import { planOf } from './fixtures.js';

/** Minor GCs while `work` runs (synchronously). */
async function minorGcsDuring(work: () => void): Promise<number> {
  let minor = 0;
  const observer = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) if (((e as PerformanceEntry & { detail?: { kind?: number } }).detail)?.kind === constants.NODE_PERFORMANCE_GC_MINOR) minor++;
  });
  observer.observe({ entryTypes: ['gc'] });
  work();
  await new Promise((r) => setTimeout(r, 50));
  observer.disconnect();
  return minor;
}

function encodeMany(plan: Plan, count: number, extra: (i: number) => unknown = () => 0): void {
  const prepared = new PreparedPlan(plan);
  const source = prepared.runSource(0, true);
  const out = Buffer.alloc(prepared.maxRequestBytes);
  let sink = 0;
  for (let i = 0; i < count; i++) {
    sink += source.next(out, 0).len;
    extra(i);
  }
  expect(sink).toBeGreaterThan(0);
}

describe('request source allocations', () => {
  const mix: Plan = {
    ...planOf(['-r', '1000']),
    commands: [
      { template: 'GET __key__', weight: 80, keyPattern: null },
      { template: 'SET', weight: 15, keyPattern: null },
      { template: 'INCR c:__key__', weight: 5, keyPattern: 'sequential' },
    ],
  };

  const mode = planOf(['-r', '1000', '--mode', 'mixed']);

  it('a weighted mix allocates no more per request than --mode mixed', async () => {
    encodeMany(mix, 50_000); // compiled before counting
    encodeMany(mode, 50_000);
    const modeGcs = await minorGcsDuring(() => encodeMany(mode, 500_000));
    const mixGcs = await minorGcsDuring(() => encodeMany(mix, 500_000));
    // A margin of 2 for a collection the test's own loop or the JIT may set off.
    expect(mixGcs, `mix ${mixGcs}, --mode mixed ${modeGcs} minor GCs per half million requests`).toBeLessThanOrEqual(modeGcs + 2);
  });

  it('the check sees a loop that allocates a small object per request', async () => {
    const kept: unknown[] = [];
    const baseline = await minorGcsDuring(() => encodeMany(mix, 500_000));
    // About 100 bytes a request (a small object with an 8-element array), kept so that it escapes: ~50 MB over the loop.
    expect(await minorGcsDuring(() => encodeMany(mix, 500_000, (i) => (kept[i & 7] = { i, a: [i, i, i, i, i, i, i, i] })))).toBeGreaterThan(baseline + 2);
  });
});
