/**
 * Verification that cannot be fooled either way (issue 20 item 5), through
 * every engine that loads: a healthy redis-server must never show lost
 * writes or stale values, whatever names the mix writes and reads, whatever
 * it deletes or expires and however its connections race; a server that
 * loses writes or keeps an overwritten value (test/faults/fault-server.mjs,
 * modes forgetful and ignores-overwrites) must show them.
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
    // Conditional writes answer when they wrote nothing (nil, :0): not acknowledged writes. Before, a healthy
    // server showed hundreds of stale values (NX) or lost writes (XX), exit 4.
    ['a write only where the key is absent (SET … NX)', ['SET __key__ __data__ NX', 'GET __key__']],
    ['SETNX', ['SETNX __key__ __data__', 'GET __key__']],
    ['a write only where the key exists (SET … XX)', ['SET __key__ __data__ XX', 'GET __key__']],
    ['SET … NX GET and SET … XX GET beside a plain write', ['SET __key__ __data__', 'SET __key__ __data__ NX GET', 'SET __key__ __data__ XX GET', 'GET __key__']],
    // Every key removed by the mix itself: its reads' nils are misses.
    ['a FLUSHDB in the mix', ['SET __key__ __data__', 'FLUSHDB SYNC', 'GET __key__']],
  ])('%s: no lost writes on a healthy redis-server', async (_, commands) => {
    const prefix = `verify:${engine}:${commands.length}:${Math.random().toString(36).slice(2, 8)}:`;
    const { run, result } = await runJson(mix(engine, redis.current.port, prefix, commands), 30_000);
    expect(result.lostWrites, run.stderr).toBe(0);
    expect(result.mismatches).toBe(0);
    expect(run.code, `${result.errors} errors, first: ${result.firstError}`).toBe(0);
    // The reads did find nils (a name the writes do not produce, or removed): counted as misses.
    expect(result.misses).toBeGreaterThan(0);
  });

  // One connection, one request at a time: every write is sequential, so each acknowledged one raises its key's
  // generation floor. A conditional write that wrote nothing raised it too before, and the key's real value then read
  // as stale (hundreds of mismatches, exit 4).
  it.each([
    ['SET … NX', ['SET __key__ __data__ NX', 'GET __key__']],
    ['SETNX', ['SETNX __key__ __data__', 'GET __key__']],
    ['SET … NX GET', ['SET __key__ __data__ NX GET', 'GET __key__']],
  ])('%s one request at a time: no stale values on a healthy redis-server', async (_, commands) => {
    const prefix = `verify:${engine}:seq:${Math.random().toString(36).slice(2, 8)}:`;
    const { run, result } = await runJson(mix(engine, redis.current.port, prefix, commands, ['-c', '1', '--pipeline', '1', '--requests', '2000', '--value-generation', '1']), 30_000);
    expect([result.mismatches, result.lostWrites], `${result.firstMismatch}`).toEqual([0, 0]);
    expect(run.code, run.stderr).toBe(0);
  });

  it('--multi-key-get reads the key --set-cmd writes: MGET of p:__key__ finds every key a set run wrote there', async () => {
    const prefix = `verify:${engine}:mget:${Math.random().toString(36).slice(2, 8)}:`;
    const common = ['--engine', engine, '--port', String(redis.current.port), '--key-prefix', prefix, '--keyspace', '40', '--timeout', '10s', '--set-cmd', 'SET p:__key__ __data__'];
    const written = await runJson([...common, '--mode', 'set', '--key-pattern', 'S:S', '--requests', '40', '-c', '1']);
    expect(written.run.code, written.run.stderr).toBe(0);
    const { run, result } = await runJson([...common, '--mode', 'get', '--no-preload', '--multi-key-get', '4', '--verify-get', '--requests', '400']);
    expect(result.plan.getCmd).toBe('MGET p:__key__ p:__key__ p:__key__ p:__key__');
    // Before, MGET read the undecorated keys: every read a miss (exit 4 in get mode; exit 0 and nothing checked in mixed mode).
    expect([result.misses, result.mismatches], run.stderr).toEqual([0, 0]);
    expect(run.code).toBe(0);
  });

  it('--verify-get says once when reads name keys no write of the run names (a nil there is a miss), and not when they match', async () => {
    const prefix = `verify:${engine}:note:${Math.random().toString(36).slice(2, 8)}:`;
    const apart = await runJson(mix(engine, redis.current.port, prefix, ['SET a:__key__ __data__', 'GET b:__key__']));
    expect(apart.run.stderr).toContain('respbench: note: --verify-get: "GET b:__key__" reads keys that no write of this run names (its writes: "SET a:__key__ __data__")');
    const mixed = await runJson(['--engine', engine, '--port', String(redis.current.port), '--key-prefix', prefix, '-r', '50', '-n', '2000', '--mode', 'mixed', '--verify-get', '--set-cmd', 'SET a:__key__ __data__', '-q']);
    expect(mixed.run.stderr).toMatch(/note: --verify-get: "GET" reads keys that no write of this run names/);
    const together = await runJson(mix(engine, redis.current.port, prefix, ['SET a:__key__ __data__', 'GET a:__key__']));
    expect(together.run.stderr).not.toContain('--verify-get:');
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

/** A run of `more` on `port` over a small keyspace (every key written many times), values of one size. */
function overwrites(engine: string, port: number, prefix: string, more: string[]): string[] {
  return ['--engine', engine, '--port', String(port), '--key-prefix', prefix, '--keyspace', '20', '--timeout', '10s', '-q', ...more];
}

describe.each(engines())('engine %s: lost overwrites are told by value generations', (engine) => {
  const STALE = /^key \S+: stale value: generation (\d+), wrote (\d+) \(the server acknowledged a newer write and returned an older value\)$/;

  it('a get run with --value-generation N+1 over what N wrote: stale on a server that keeps the old value, clean on redis-server', async () => {
    const lying = await fault('ignores-overwrites');
    for (const [port, healthy] of [[lying, false], [redis.current.port, true]] as const) {
      const prefix = `verify:gen:${engine}:${healthy}:`;
      const first = await runJson(overwrites(engine, port, prefix, ['--mode', 'set', '-n', '200']), 30_000);
      expect(first.run.code).toBe(0);
      const { run, result } = await runJson(overwrites(engine, port, prefix, ['--mode', 'get', '--verify-get', '--value-generation', '1', '-n', '200']), 30_000);
      if (healthy) {
        expect([run.code, result.mismatches, result.ok]).toEqual([0, 0, 200]);
      } else {
        // Same sizes, same key: before generations these values verified.
        expect(run.code).toBe(4);
        expect(result.mismatches).toBe(200);
        expect(STALE.exec(result.firstMismatch)?.slice(1)).toEqual(['0', '1']);
      }
    }
  });

  it('a stale value of a decorated key is named as the key the server was asked for (x:<prefix><i>), in a mix and through MGET', async () => {
    const lying = await fault('ignores-overwrites');
    const prefix = `verify:dec:${engine}:`;
    const first = await runJson(overwrites(engine, lying, prefix, ['--mode', 'set', '--set-cmd', 'SET x:__key__ __data__', '-n', '200']), 30_000);
    expect(first.run.code).toBe(0);
    const read = ['--verify-get', '--value-generation', '1', '-n', '200', '--no-preload'];
    const single = await runJson(overwrites(engine, lying, prefix, ['--mode', 'get', '--set-cmd', 'SET x:__key__ __data__', '--get-cmd', 'GET x:__key__', ...read]), 30_000);
    expect(single.result.firstMismatch).toMatch(new RegExp(`^key x:${prefix}\\d+: stale value`));
    const multi = await runJson(overwrites(engine, lying, prefix, ['--mode', 'get', '--set-cmd', 'SET x:__key__ __data__', '--multi-key-get', '2', ...read]), 30_000);
    expect(multi.result.firstMismatch).toMatch(new RegExp(`^key x:${prefix}\\d+: `));
  });

  // Mixed runs on one connection draw per-key generations; writes racing in its pipeline on 20 hot keys
  // must never make a healthy server's value look stale, and a server that ignores overwrites must be caught.
  it.each([
    ['one request in flight', ['-c', '1', '--pipeline', '1']],
    ['pipelined', ['-c', '1', '--pipeline', '16']],
  ])('mixed --verify-get, one connection, %s: stale values on a server that ignores overwrites, none on redis-server', async (_, shape) => {
    const lying = await fault('ignores-overwrites');
    const mixed = ['--mode', 'mixed', '--verify-get', '--value-generation', '1', '-n', '6000', '--seed', '11', ...shape];
    const bad = await runJson(overwrites(engine, lying, `verify:mix:${engine}:`, mixed), 30_000);
    expect(bad.run.code).toBe(4);
    expect(bad.result.mismatches).toBeGreaterThan(100);
    expect(bad.result.lostWrites).toBe(0);
    const [got, wrote] = STALE.exec(bad.result.firstMismatch)!.slice(1).map(Number);
    expect(got).toBeLessThan(wrote);
    const good = await runJson(overwrites(engine, redis.current.port, `verify:mix:${engine}:${shape.join('')}:`, mixed), 30_000);
    expect(good.result.firstMismatch ?? null, good.run.stderr).toBeNull();
    expect([good.run.code, good.result.mismatches, good.result.lostWrites, good.result.ok]).toEqual([0, 0, 0, 6000]);
  });
});

describe.each(engines())('engine %s: value generations keep verification exact', (engine) => {
  it('more connections write the values of --value-generation (the same dataset from both engines, every run)', async () => {
    const prefix = `verify:many:${engine}:`;
    const args = overwrites(engine, redis.current.port, prefix, ['--mode', 'mixed', '--verify-get', '-n', '2000', '-c', '4', '--pipeline', '8', '--value-generation', '3']);
    const { run, result } = await runJson(args, 30_000);
    expect([run.code, result.mismatches]).toEqual([0, 0]);
    const got = await runJson(overwrites(engine, redis.current.port, prefix, ['--mode', 'get', '--verify-get', '--no-preload', '-n', '200', '--value-generation', '3']), 30_000);
    expect([got.run.code, got.result.mismatches]).toEqual([0, 0]);
  });
});
