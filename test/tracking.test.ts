/**
 * RESP3 push frames from a real server (issue 12, item 3): a -3 run with
 * CLIENT TRACKING on in its handshake (the hidden --client-tracking) reads
 * keys while a second client rewrites them, so the server sends invalidation
 * push frames between (and inside the batches of) the replies. Through both
 * engines the replies stay in step: every read verifies, the pushes are
 * counted apart. test/replies.test.ts covers the same with the fault
 * server's push-frames mode (a push before every reply).
 */
import { describe, expect, it } from 'vitest';
import { engines } from './helpers/engines.js';
import { runCli, runJson, useRedis } from './helpers/servers.js';

const redis = useRedis();
const KEYS = ['-r', '1000', '--seed', '3'];

describe.each(engines())('engine %s', (engine) => {
  it('-3 --client-tracking with keys rewritten by another client during the run: replies in step, invalidations counted as pushes', async () => {
    const port = String(redis.current.port);
    const seeded = await runCli(['--port', port, '-q', '--mode', 'set', '-n', '5000', '--key-pattern', 'sequential', ...KEYS]);
    expect(seeded.code, seeded.stderr).toBe(0);
    // The second client: rewrites the same keys with the same (derived) values for the whole read run.
    const writer = runCli(['--port', port, '-q', '--mode', 'set', '--duration', '3s', ...KEYS], 30_000);
    await new Promise((r) => setTimeout(r, 300));
    const { run, result } = await runJson(['--engine', engine, '--port', port, '-3', '--client-tracking', '--mode', 'get', '--no-preload', '--verify-get', '-n', '100000', '-c', '2', '-P', '32', ...KEYS]);
    expect((await writer).code).toBe(0);
    expect(run.code, run.stderr).toBe(0);
    expect(result.failure).toBeNull();
    expect(result.plan).toMatchObject({ resp3: true, clientTracking: true });
    expect(result).toMatchObject({ requests: 100_000, ok: 100_000, misses: 0, mismatches: 0, errors: 0 });
    expect(result.pushes).toBeGreaterThan(0);
  });
});

describe('--client-tracking', () => {
  it('without -3: one line, exit 2', async () => {
    const run = await runCli(['--port', '1', '-n', '1', '--client-tracking']);
    expect(run.code).toBe(2);
    expect(run.stderr.trim()).toBe('respbench: --client-tracking needs -3/--resp3 (invalidations come as RESP3 push frames)');
  });
});
