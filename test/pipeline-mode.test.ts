/**
 * --pipeline-mode window|batch (issue 20 item 10), through every engine that
 * loads. A Nagle-ish server (test/faults/fault-server.mjs hold-last: the
 * last reply of each read waits for the next request, or 50 ms) stalls
 * redis-benchmark's -P (send N, wait for all N) once per batch, and not a
 * sliding window, which sends as each reply comes. Both send the same
 * requests, byte for byte. (What the header says of the mode:
 * run-says.test.ts.)
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFaultServer, type FaultServer } from './faults/fault-server.mjs';
import { engines } from './helpers/engines.js';
import { runJson } from './helpers/servers.js';

const HOLD_MS = 50;
const PIPELINE = 8;
const BATCHES = 20;

let server: FaultServer;
beforeAll(async () => {
  server = await startFaultServer({ mode: 'hold-last', every: HOLD_MS });
});
afterAll(async () => {
  await server?.close();
});

function run(engine: string, more: string[]): string[] {
  return [
    '--engine', engine, '--port', String(server.port), '--mode', 'set', '-c', '1', '-P', String(PIPELINE),
    '-n', String(PIPELINE * BATCHES), '--keyspace', '100', '--seed', '5', '--timeout', '10s', '-q', ...more,
  ];
}

describe.each(engines())('engine %s: --pipeline-mode', (engine) => {
  it('batch waits for every reply of a batch (one held reply a batch), window does not; the same traffic', async () => {
    const batch = await runJson(run(engine, ['--pipeline-mode', 'batch']), 30_000);
    const window = await runJson(run(engine, ['--pipeline-mode', 'window']), 30_000);
    for (const r of [batch, window]) expect([r.run.code, r.result.requests, r.result.errors]).toEqual([0, PIPELINE * BATCHES, 0]);
    // Each batch waits for its held reply: at least BATCHES × HOLD_MS, whatever the machine does.
    expect(batch.result.elapsedNs / 1e6).toBeGreaterThanOrEqual(BATCHES * HOLD_MS * 0.9);
    // A window sends as each reply comes, which releases the held one: it waits once, at the end.
    expect(window.result.elapsedNs).toBeLessThan(batch.result.elapsedNs / 3);
    expect(window.result.bytesOut).toBe(batch.result.bytesOut);
    expect(window.result.bytesIn).toBe(batch.result.bytesIn);
    expect(batch.result.plan.pipelineMode).toBe('batch');
    expect(window.result.plan.pipelineMode).toBeUndefined();
  });

  it('batch under --rate: each batch goes out as its requests fall due and the next once it is answered; the run keeps the rate and ends', async () => {
    // The held reply every 50 ms bounds a batch: 8 requests per batch at 100/s is one batch each 80 ms, slower than the hold.
    const { run: r, result } = await runJson(run(engine, ['--pipeline-mode', 'batch', '--rate', '100']), 30_000);
    expect([r.code, result.requests, result.errors], r.stderr).toEqual([0, PIPELINE * BATCHES, 0]);
    expect(result.plan.pipelineMode).toBe('batch');
    // 160 requests at 100/s: about 1.6 s.
    expect(result.elapsedNs / 1e9).toBeGreaterThan(1.4);
    expect(result.elapsedNs / 1e9).toBeLessThan(4);
  });
});
