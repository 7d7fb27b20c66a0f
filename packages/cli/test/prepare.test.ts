/**
 * The one completion of a Plan (prepare.ts) and the refusals it relies on
 * (validate.ts): what run, the suite, capacity and study get from it, and
 * that the Plan buildPlan made is never changed (it is frozen here).
 */
import { describe, expect, it } from 'vitest';
import type { Plan } from '../src/engine-js/plan.js';
import { completePlan, preparePlan } from '../src/prepare.js';
import { BENCHMARK_DEFAULTS } from '../src/suite.js';
import { checkRunCommand, readClientShare } from '../src/validate.js';
import { LIMITS } from '../src/engine-js/limits.js';
import { planOf } from './fixtures.js';

/** A Plan no step may write to, down to its nested parts. */
function frozen(plan: Plan): Plan {
  const freeze = (v: unknown): unknown => {
    if (v && typeof v === 'object' && !Object.isFrozen(v)) {
      for (const inner of Object.values(v)) freeze(inner);
      Object.freeze(v);
    }
    return v;
  };
  return freeze(plan) as Plan;
}

describe('--client-index / --client-count', () => {
  it('makes the Plan of the single run with count × -c connections, this machine its share; refuses what cannot be one', () => {
    const plan = frozen(planOf(['-c', '4', '--seed', '1']));
    expect(readClientShare(plan, {})).toBeNull();
    const share = readClientShare(plan, { clientIndex: '2', clientCount: '3', seed: '1' });
    expect(share).toEqual({ index: 2, count: 3 });
    expect(completePlan(plan, { engine: 'native', share })).toMatchObject({ connections: 12, clientIndex: 2, clientCount: 3 });
    expect(() => readClientShare(plan, { clientIndex: '3', clientCount: '3', seed: '1' })).toThrow(/--client-index/);
    expect(() => readClientShare(plan, { clientIndex: '0', clientCount: '3' })).toThrow(/needs --seed/);
    expect(() => readClientShare(plan, { clientCount: '3', seed: '1' })).toThrow(/go together/);
    expect(() => readClientShare(planOf(['-c', '20']), { clientIndex: '0', clientCount: '1000', seed: '1' })).toThrow(/connections × --client-count must be at most/);
  });
});

describe('completePlan', () => {
  it('says the threads that run: one in JS, at most one per connection in native', () => {
    const plan = frozen(planOf(['--threads', '8', '-c', '3']));
    expect(completePlan(plan, { engine: 'js' }).threads).toBe(1);
    expect(completePlan(plan, { engine: 'native' }).threads).toBe(3);
    expect(completePlan(frozen(planOf(['--threads', '2', '-c', '3'])), { engine: 'native' }).threads).toBe(2);
  });

  it('-t and a command on the line take redis-benchmark\'s defaults for what was not given, then the threads clamp sees its -c 50', () => {
    const plan = frozen(planOf(['--threads', '64', '-P', '4']));
    const given = (o: string) => o === 'pipeline';
    const suite = completePlan(plan, { engine: 'native', benchmark: { given, command: null } });
    expect(suite).toMatchObject({ connections: BENCHMARK_DEFAULTS.connections, pipeline: 4, requests: BENCHMARK_DEFAULTS.requests, keyPrefix: '', threads: BENCHMARK_DEFAULTS.connections });
    const command = completePlan(plan, { engine: 'native', benchmark: { given, command: ['INCR', 'counter:__rand_int__'] } });
    expect(command).toMatchObject({ mode: 'set', setCmd: 'INCR counter:__rand_int__', literalCommands: true });
  });

  it('--cpus and the embedded server\'s address land in a new Plan; the one built is left as it was', () => {
    const built = planOf(['-p', '7000']);
    const before = structuredClone(built);
    const done = completePlan(frozen(built), { engine: 'native', cpus: [0, 2], server: { host: '127.0.0.1', port: 40001 } });
    expect(done).toMatchObject({ cpus: [0, 2], host: '127.0.0.1', port: 40001 });
    expect(done).not.toBe(built);
    expect(built).toEqual(before);
  });
});

describe('preparePlan', () => {
  it('without --cluster it is the completion, with no I/O', async () => {
    const plan = frozen(planOf(['-c', '2', '--threads', '4']));
    await expect(preparePlan(plan, { engine: 'native' })).resolves.toEqual(completePlan(plan, { engine: 'native' }));
  });

  it('under --cluster it asks the seeds for the topology once, and says why when none answers', async () => {
    // Port 1 on loopback: nothing listens there, so discovery fails fast with its one-line reason.
    const plan = frozen(planOf(['--cluster', '-p', '1', '--timeout', '1s']));
    await expect(preparePlan(plan, { engine: 'js' })).rejects.toThrow(/--cluster: no seed node told the topology \(127\.0\.0\.1:1: /);
  });
});

describe('-t with --client-index/--client-count', () => {
  const line = { tests: true, command: null, compare: false, csv: false, embedded: false, seed: '1' };
  const given = (o: string) => o === 'seed';

  it('each machine runs redis-benchmark\'s -c 50 when -c is not given: 50 × count connections in all', () => {
    const plan = frozen(planOf(['--seed', '1']));
    const share = checkRunCommand(plan, { ...line, clientIndex: '1', clientCount: '2' }, given);
    expect(share).toEqual({ index: 1, count: 2 });
    expect(completePlan(plan, { engine: 'js', benchmark: { given, command: null }, share })).toMatchObject({ connections: 2 * BENCHMARK_DEFAULTS.connections, clientIndex: 1, clientCount: 2 });
  });

  it('the connection limit counts those 50 per machine', () => {
    const count = String(Math.floor(LIMITS.connections[1] / BENCHMARK_DEFAULTS.connections) + 1);
    expect(() => checkRunCommand(planOf(['--seed', '1']), { ...line, clientIndex: '0', clientCount: count }, given)).toThrow(/-c\/--connections × --client-count must be at most/);
    expect(checkRunCommand(planOf(['--seed', '1']), { ...line, tests: false, clientIndex: '0', clientCount: count }, given)).toEqual({ index: 0, count: Number(count) });
  });
});
