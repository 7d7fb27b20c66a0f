/**
 * Replies that must not pass for what they are not, through every engine
 * that loads: a reply nobody asked for (a greeting), RESP3 push frames,
 * another key's value (a lying proxy), a verbatim string, and writes the
 * server acknowledged and then lost. Servers: test/faults/fault-server.mjs
 * and a small lying proxy in front of it.
 */
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { startFaultServer, type FaultServer } from './faults/fault-server.mjs';
import { STACK_TRACE } from './faults/harness.js';
import { bothEngines, engines } from './helpers/engines.js';
import { runCli, runJson } from './helpers/servers.js';

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (closers.length > 0) await closers.pop()!();
});

async function serve(mode: string): Promise<FaultServer> {
  const server = await startFaultServer({ mode, after: 0 });
  closers.push(() => server.close());
  return server;
}

const PREFIX = 'bench:lie:';
const KEYSPACE = 20;

/** Complete RESP commands (arrays of bulk strings) at the front of buf, and the bytes they took. */
function takeCommands(buf: Buffer): [Buffer[][], number] {
  const commands: Buffer[][] = [];
  let pos = 0;
  outer: while (pos < buf.length) {
    let lineEnd = buf.indexOf('\r\n', pos);
    if (lineEnd < 0) break;
    const count = Number(buf.toString('latin1', pos + 1, lineEnd));
    let p = lineEnd + 2;
    const args: Buffer[] = [];
    for (let i = 0; i < count; i++) {
      lineEnd = buf.indexOf('\r\n', p);
      if (lineEnd < 0) break outer;
      const len = Number(buf.toString('latin1', p + 1, lineEnd));
      if (lineEnd + 2 + len + 2 > buf.length) break outer;
      args.push(buf.subarray(lineEnd + 2, lineEnd + 2 + len));
      p = lineEnd + 2 + len + 2;
    }
    commands.push(args);
    pos = p;
  }
  return [commands, pos];
}

function encode(args: Buffer[]): Buffer {
  return Buffer.concat([Buffer.from(`*${args.length}\r\n`), ...args.flatMap((a) => [Buffer.from(`$${a.length}\r\n`), a, Buffer.from('\r\n')])]);
}

/**
 * A TCP proxy that forwards everything to `upstream` but asks for the next
 * key's value on every read (`GET bench:lie:7` goes on as `GET bench:lie:8`):
 * each reply is a real value, just another key's.
 */
async function startLyingProxy(upstream: number): Promise<number> {
  const server = net.createServer((client) => {
    const up = net.connect(upstream, '127.0.0.1');
    up.on('data', (d) => client.write(d));
    up.on('end', () => client.end());
    up.on('error', () => client.destroy());
    client.on('end', () => up.end());
    client.on('error', () => up.destroy());
    let carry = Buffer.alloc(0);
    client.on('data', (chunk: Buffer) => {
      carry = Buffer.concat([carry, chunk]);
      const [commands, used] = takeCommands(carry);
      carry = Buffer.from(carry.subarray(used));
      const out = commands.map((args) => {
        if (args.length !== 2) return encode(args);
        const index = Number(args[1].toString('latin1').slice(PREFIX.length));
        return encode([args[0], Buffer.from(`${PREFIX}${(index + 1) % KEYSPACE}`)]);
      });
      if (out.length > 0) up.write(Buffer.concat(out));
    });
  });
  const sockets = new Set<net.Socket>();
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closers.push(
    () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  );
  return (server.address() as net.AddressInfo).port;
}

function load(engine: string, port: number, more: string[] = []): string[] {
  return ['--engine', engine, '--port', String(port), '--requests', '200', '--pipeline', '4', '--seed', '7', '--timeout', '5s', '-q', ...more];
}

/** A get run over the lying proxy's keyspace, verified, with values of `size` bytes. */
function lyingRead(engine: string, port: number, size: number): string[] {
  return load(engine, port, ['--mode', 'get', '--verify-get', '--keyspace', String(KEYSPACE), '--key-prefix', PREFIX, '--requests', '100', '--value-size', String(size)]);
}

describe.each(engines())('engine %s: replies nobody asked for', (engine) => {
  it('a server that greets with +OK before any request fails the run with a protocol error, every time', async () => {
    const s = await serve('greeting');
    // Pipelined, the extra reply shows as soon as a read holds more replies
    // than requests in flight; one at a time, when the server closes.
    for (const more of [['-c', '1'], ['-c', '2'], ['--pipeline', '1'], ['--pipeline', '1', '--mode', 'set', '-c', '3']]) {
      const { run, result } = await runJson(load(engine, s.port, more), 20_000);
      expect(run.code).toBe(1);
      expect(result.failure?.kind).toBe('protocol');
      expect(result.failure.message).toMatch(/protocol error after \d+ replies: a reply no request asked for \(the server sent more replies than requests, e\.g\. a greeting\), at byte \d+ of the replies: "/);
      expect(result.complete).toBe(false);
      expect(run.stderr).not.toMatch(STACK_TRACE);
    }
  });

  it('RESP3 push frames are skipped and counted apart, never as replies', async () => {
    const s = await serve('push-frames');
    const { run, result } = await runJson(load(engine, s.port, ['--mode', 'mixed', '--verify-get', '--keyspace', '20', '--requests', '300']), 20_000);
    expect(run.code).toBe(0);
    expect(result.failure).toBeNull();
    expect(result.requests).toBe(300);
    expect(result.ok).toBe(300);
    expect(result.mismatches).toBe(0);
    expect(result.lostWrites).toBe(0);
    // One on accept (before any request), one before every reply.
    expect(result.pushes).toBe(301);
    // The table's counters: without -q, whose short lines have none.
    const human = await runCli(load(engine, s.port, ['--mode', 'set', '--requests', '50']).filter((a) => a !== '-q'), 20_000);
    expect(human.code).toBe(0);
    expect(human.stdout).toContain('pushes 51 (out-of-band, not replies)');
  });
});

describe.each(engines())('engine %s: verification that means it', (engine) => {
  for (let size = 1; size <= 16; size++) {
    it(`--value-size ${size}: another key's value ${size < 8 ? 'cannot be told apart, so --verify-get is refused (exit 2)' : 'never verifies'}`, async () => {
      const upstream = await serve('ok');
      const proxy = await startLyingProxy(upstream.port);
      if (size < 8) {
        const run = await runCli(lyingRead(engine, proxy, size), 20_000);
        expect(run.code).toBe(2);
        expect(run.stdout).toBe('');
        expect(run.stderr.trim().split('\n')).toHaveLength(1);
        expect(run.stderr).toContain(`--verify-get needs values of at least 8 bytes (--value-size 8 or more)`);
        expect(run.stderr).toContain(`(got --value-size ${size})`);
        return;
      }
      const { run, result } = await runJson(lyingRead(engine, proxy, size), 20_000);
      expect(run.code).toBe(4);
      expect(result.gets).toBe(100);
      expect(result.mismatches).toBe(100);
      expect(result.ok).toBe(0);
      expect(result.firstMismatch).toMatch(new RegExp(`^key ${PREFIX}\\d+: ${size} bytes expected, ${size} received, first difference at byte [0-7]: expected "[0-9a-f]{${Math.min(size, 8)}}`));
    });
  }

  it('a value size range reaching below 8 bytes is refused too; an honest server passes at 8', async () => {
    const upstream = await serve('ok');
    const refused = await runCli(lyingRead(engine, upstream.port, 8).concat(['--value-size', '4-64']), 20_000);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('(got --value-size 4-64)');
    const { run, result } = await runJson(lyingRead(engine, upstream.port, 8), 20_000);
    expect(run.code).toBe(0);
    expect([result.ok, result.mismatches]).toEqual([100, 0]);
  });

  it('RESP3 verbatim strings are compared and shown by their text, after the txt: prefix', async () => {
    const upstream = await serve('verbatim');
    const honest = await runJson(lyingRead(engine, upstream.port, 32), 20_000);
    expect(honest.run.code).toBe(0);
    expect([honest.result.ok, honest.result.mismatches]).toEqual([100, 0]);
    const proxy = await startLyingProxy(upstream.port);
    const { run, result } = await runJson(lyingRead(engine, proxy, 32), 20_000);
    expect(run.code).toBe(4);
    expect(result.mismatches).toBe(100);
    expect(result.firstMismatch).toMatch(/: 32 bytes expected, 32 received, first difference at byte \d: expected "[0-9a-f]{8}[0-9A-Za-z]+", got "[0-9a-f]{8}[0-9A-Za-z]+"$/);
    expect(result.firstMismatch).not.toContain('txt:');
  });

  it('a mismatch deep inside a large value shows both lengths and the bytes where they differ', async () => {
    const s = await serve('corrupt-last-byte');
    const { run, result } = await runJson(lyingRead(engine, s.port, 100_000).concat(['--requests', '20']), 30_000);
    expect(run.code).toBe(4);
    expect(result.mismatches).toBe(20);
    const m = /^key \S+: 100000 bytes expected, 100000 received, first difference at byte 99999: expected "…([^"]{9})", got "…([^"]{9})"$/.exec(result.firstMismatch);
    expect(m, result.firstMismatch).not.toBeNull();
    // The shown windows end at the differing byte: the same 8 bytes, then the one that differs.
    expect(m![1].slice(0, 8)).toBe(m![2].slice(0, 8));
    expect(m![2].slice(8)).toBe('!');
  });

  it('a server that acknowledges every write and stores nothing fails --verify-get: lost writes in mixed mode, misses in get mode', async () => {
    const s = await serve('forgetful');
    const mixed = ['--mode', 'mixed', '--verify-get', '--keyspace', '20', '--requests', '400'];
    const { run, result } = await runJson(load(engine, s.port, mixed), 20_000);
    expect(run.code).toBe(4);
    expect(result.lostWrites).toBeGreaterThan(50);
    expect(result.ok + result.lostWrites).toBe(400);
    expect(result.misses + result.lostWrites).toBe(result.gets);
    const human = await runCli(load(engine, s.port, mixed), 20_000);
    expect(human.code).toBe(4);
    expect(human.stdout).toMatch(/VERIFY FAILED: \d+ reads found no value for a key this run had written and the server had acknowledged \(lost writes\)/);
    const get = await runJson(load(engine, s.port, ['--mode', 'get', '--verify-get', '--keyspace', '20']), 20_000);
    expect(get.run.code).toBe(4);
    expect([get.result.misses, get.result.ok]).toEqual([200, 0]);
    // The same run against a server that keeps what it acknowledges passes.
    const honest = await serve('ok');
    const ok = await runJson(load(engine, honest.port, mixed), 20_000);
    expect(ok.run.code).toBe(0);
    expect([ok.result.lostWrites, ok.result.ok]).toEqual([0, 400]);
  });
});

describe.skipIf(!bothEngines())('the engines word a mismatch alike', () => {
  it('same first mismatch text through the lying proxy', async () => {
    const upstream = await serve('ok');
    const proxy = await startLyingProxy(upstream.port);
    const js = await runJson(lyingRead('js', proxy, 12), 20_000);
    const native = await runJson(lyingRead('native', proxy, 12), 20_000);
    expect(native.result.firstMismatch).toBe(js.result.firstMismatch);
  });
});
