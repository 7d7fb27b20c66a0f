/**
 * --io auto|uring|epoll (issue 21): the header names the native engine's
 * I/O backend; auto falls back to epoll with the reason when io_uring is
 * refused (RESPBENCH_IO_URING_REFUSE=1 simulates a seccomp profile that
 * forbids io_uring_setup), and --io uring there is one line and exit 1.
 * The JS engine ignores --io with a notice.
 */
import { describe, expect, it } from 'vitest';
import { bothEngines, uringWorks } from './helpers/engines.js';
import { runCli, runJson, useRedis } from './helpers/servers.js';

const native = bothEngines();
const redis = useRedis();
const REFUSED = { ...process.env, RESPBENCH_IO_URING_REFUSE: '1', RESPBENCH_IO: '' };
const PLAIN = { ...process.env, RESPBENCH_IO: '' };

function load(...more: string[]): string[] {
  return ['--port', String(redis.current.port), '--requests', '2000', '-c', '4', '-P', '4', '--timeout', '5s', ...more];
}

describe.skipIf(!native)('--io on the native engine', () => {
  it('auto with io_uring refused: runs on epoll and the header says why', async () => {
    const run = await runCli(['--engine', 'native', ...load()], 30_000, REFUSED);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/^io: epoll \(io_uring refused by the sandbox \(EPERM, simulated by RESPBENCH_IO_URING_REFUSE=1\); running on epoll\)$/m);
    expect(run.stdout).toMatch(/requests 2000\/2000 · ok 2000/);
  });

  it('--io uring with io_uring refused: one line naming the reason, exit 1, nothing sent', async () => {
    const run = await runCli(['--engine', 'native', '--io', 'uring', ...load()], 30_000, REFUSED);
    expect(run.code).toBe(1);
    expect(run.stderr.trim()).toBe('respbench: --io uring: io_uring refused by the sandbox (EPERM, simulated by RESPBENCH_IO_URING_REFUSE=1)');
    expect(run.stdout).toBe('');
  });

  it('--json records the backend that ran and why (meta.io), not the one asked for; the JS engine none', async () => {
    const fellBack = await runJson(['--engine', 'native', ...load()], 30_000, REFUSED);
    expect(fellBack.result.meta.io).toEqual({ backend: 'epoll', note: 'io_uring refused by the sandbox (EPERM, simulated by RESPBENCH_IO_URING_REFUSE=1); running on epoll' });
    const asked = await runJson(['--engine', 'native', '--io', 'epoll', ...load()], 30_000, PLAIN);
    expect(asked.result.meta.io).toEqual({ backend: 'epoll', note: null });
    const js = await runJson(['--engine', 'js', ...load()], 30_000, PLAIN);
    expect(js.result.meta.io).toBeUndefined();
  });

  it('--io epoll: the header says epoll, without a reason', async () => {
    const run = await runCli(['--engine', 'native', '--io', 'epoll', ...load()], 30_000, PLAIN);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/^io: epoll$/m);
  });

  it.skipIf(!uringWorks())('auto where io_uring works: the header says io_uring and the run completes', async () => {
    const run = await runCli(['--engine', 'native', ...load()], 30_000, PLAIN);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/^io: io_uring$/m);
    expect(run.stdout).toMatch(/requests 2000\/2000 · ok 2000/);
  });
});

describe('--io as a flag', () => {
  it('a backend it does not know is one line naming the flag, exit 2', async () => {
    const run = await runCli(['--io', 'kqueue', ...load()], 30_000, PLAIN);
    expect(run.code).toBe(2);
    expect(run.stderr.trim()).toBe('respbench: --io must be one of auto, uring, epoll (got "kqueue")');
  });

  it('an empty --io= is refused like any other bad value; a bad RESPBENCH_IO is named as the variable, not a flag', async () => {
    const empty = await runCli(['--io=', ...load()], 30_000, PLAIN);
    expect([empty.code, empty.stderr.trim()]).toEqual([2, 'respbench: --io must be one of auto, uring, epoll (got "")']);
    const env = await runCli(load(), 30_000, { ...PLAIN, RESPBENCH_IO: 'kqueue' });
    expect([env.code, env.stderr.trim()]).toEqual([2, 'respbench: RESPBENCH_IO must be one of auto, uring, epoll (got "kqueue")']);
  });

  it('the JS engine ignores --io with a notice, and prints no io line', async () => {
    const run = await runCli(['--engine', 'js', '--io', 'uring', ...load()], 30_000, PLAIN);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toContain("respbench: --io applies to the native engine; the JS engine runs on node's event loop");
    expect(run.stdout).not.toMatch(/^io: /m);
  });
});
