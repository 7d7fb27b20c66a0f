/**
 * Verification that cannot be fooled either way (issue 20 item 5), through
 * every engine that loads: a healthy redis-server must never show lost
 * writes, whatever names the mix writes and reads and whatever it deletes or
 * expires; a server that loses writes (test/faults/fault-server.mjs) must
 * show them.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { startFaultServer } from './faults/fault-server.mjs';
import { engines } from './helpers/engines.js';
import { runJson, useRedis } from './helpers/servers.js';

const redis = useRedis();
const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (closers.length > 0) await closers.pop()!();
});

async function fault(mode: string): Promise<number> {
  const server = await startFaultServer({ mode, after: 0 });
  closers.push(() => server.close());
  return server.port;
}

/** A verified mix run of `commands` (each a template, weight 1) on `port`. */
function mix(engine: string, port: number, prefix: string, commands: string[], more: string[] = []): string[] {
  return [
    '--engine', engine, '--port', String(port), '--key-prefix', prefix, '--keyspace', '50', '--requests', '4000',
    '-c', '4', '--pipeline', '8', '--seed', '3', '--timeout', '10s', '--verify-get', '-q',
    ...commands.flatMap((c) => ['--command', c]), ...more,
  ];
}

describe.each(engines())('engine %s: lost writes are told per key name', (engine) => {
  // Each mix reads names no write of it produces, or that a command of it may remove: a healthy
  // server's nils there are misses. Before lost writes were told per key name, each reported
  // hundreds of lost writes (exit 4) on this redis-server.
  it.each([
    ['a decorated write, a plain read', ['SET x:__key__ __data__', 'GET __key__']],
    ['a hash write, a plain read', ['HSET h:__key__ f __data__', 'GET __key__']],
    ['a write, a read and a DEL of the same name', ['SET __key__ __data__', 'GET __key__', 'DEL __key__']],
    ['an UNLINK of a decorated name the read uses', ['SET __key__ __data__', 'SET s:__key__ __data__', 'GET s:__key__', 'UNLINK s:__key__']],
    ['a write that expires at once', ['SET __key__ __data__ PX 1', 'GET __key__']],
    ['an EXPIRE after the write', ['SET __key__ __data__', 'PEXPIRE __key__ 1', 'GET __key__']],
    ['a GETDEL beside the GET', ['SET __key__ __data__', 'GETDEL __key__', 'GET __key__']],
  ])('%s: no lost writes on a healthy redis-server', async (_, commands) => {
    const prefix = `verify:${engine}:${commands.length}:${Math.random().toString(36).slice(2, 8)}:`;
    const { run, result } = await runJson(mix(engine, redis.current.port, prefix, commands), 30_000);
    expect(result.lostWrites, run.stderr).toBe(0);
    expect(result.mismatches).toBe(0);
    expect(run.code).toBe(0);
    // The reads did find nils (a name the writes do not produce, or removed): counted as misses.
    expect(result.misses).toBeGreaterThan(0);
  });

  it('a server that stores nothing still shows lost writes for a decorated name written and read', async () => {
    const port = await fault('forgetful');
    const { run, result } = await runJson(mix(engine, port, 'verify:forget:', ['SET x:__key__ __data__', 'GET x:__key__', 'GET __key__']), 30_000);
    expect(run.code).toBe(4);
    expect(result.lostWrites).toBeGreaterThan(100);
    // Reads of the name nobody writes are misses, never lost writes.
    expect(result.lostWrites + result.misses).toBe(result.gets);
  });
});
