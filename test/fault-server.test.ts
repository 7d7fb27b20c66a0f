/**
 * What a user sees when a server misbehaves in ways Redis will not do on
 * request: closes or resets a connection mid-run, splits replies byte by
 * byte, sends bytes that are not RESP, stalls, answers with errors. The
 * server is test/faults/fault-server.mjs; every case runs over each engine
 * that loads.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { startFaultServer, type FaultServer } from './faults/fault-server.mjs';
import { STACK_TRACE, startNoAcceptServer, waitFor } from './faults/harness.js';
import { engines, ioEngines } from './helpers/engines.js';
import { CLI, hasTcpSocketTo, liveProcesses, runCli, runJson } from './helpers/servers.js';

/** Good replies each connection gets before the fault. */
const AFTER = 5;

let server: FaultServer | null = null;
afterEach(async () => {
  await server?.close();
  server = null;
});

async function serve(mode: string, extra: { after?: number; every?: number } = {}): Promise<FaultServer> {
  server = await startFaultServer({ mode, after: AFTER, ...extra });
  return server;
}

/** Pid of the respbench process whose arguments contain `needle`, or 0. */
function pidOf(needle: string): number {
  const line = liveProcesses(needle).find((l) => l.includes(CLI));
  return line ? Number(line.trim().split(/\s+/)[0]) : 0;
}

function load(engine: string, port: number, more: string[] = []): string[] {
  return ['--engine', engine, '--port', String(port), '--requests', '200', '--pipeline', '4', '--seed', '7', '--timeout', '5s', '-q', ...more];
}

describe.each(ioEngines())('engine %s against a faulty server', (engine) => {
  it('a server that closes the connection mid-run ends the run with the replies so far, exit 1', async () => {
    const s = await serve('close-after');
    const { run, result } = await runJson(load(engine, s.port), 20_000);
    expect(run.code).toBe(1);
    expect(result.failure.kind).toBe('closed');
    expect(result.failure.message).toMatch(new RegExp(`^connection 0\\b.*connection closed by server after ${AFTER} replies`));
    expect(result.requests).toBe(AFTER);
    expect(result.ok).toBe(AFTER);
    expect(result.complete).toBe(false);
    expect(run.stderr).not.toMatch(STACK_TRACE);
  });

  it('a connection reset in the middle of a reply is a closed connection, with the partial reply shown', async () => {
    const s = await serve('reset-mid-reply');
    const { run, result } = await runJson(load(engine, s.port), 20_000);
    expect(run.code).toBe(1);
    expect(result.failure.kind).toBe('closed');
    expect(result.failure.message).toContain(`connection closed by server after ${AFTER} replies`);
    expect(result.failure.message).toContain('$40\\r\\n0123456789');
    expect(result.requests).toBe(AFTER);
  });

  it('replies split byte by byte are counted exactly as whole ones (a valid run passes)', async () => {
    // One connection: with several, which read sees which write depends on timing.
    const args = ['--mode', 'mixed', '--verify-get', '--keyspace', '20', '--requests', '300'];
    const whole = await serve('ok');
    const reference = await runJson(load(engine, whole.port, args), 30_000);
    await whole.close();
    const split = await serve('byte-by-byte');
    const { run, result } = await runJson(load(engine, split.port, args), 30_000);
    expect(run.code).toBe(0);
    expect(result.failure).toBeNull();
    expect(result.complete).toBe(true);
    for (const field of ['requests', 'ok', 'sets', 'gets', 'misses', 'mismatches', 'errors', 'bytesIn', 'bytesOut']) {
      expect([field, result[field]]).toEqual([field, reference.result[field]]);
    }
    expect(result.requests).toBe(300);
    expect(result.mismatches).toBe(0);
  });

  const malformed: Array<[mode: string, kind: string, reason: RegExp, shown: string]> = [
    ['bad-type-byte', 'protocol', /unknown reply type byte/, '?what\\r\\n'],
    ['bad-length', 'protocol', /bad bulk length/, '$abc\\r\\n'],
    ['garbage-after-reply', 'protocol', /unknown reply type byte|unexpected bytes/, '\\x00\\xffgarbage\\r\\n'],
    // The declared length cannot be told from a slow server until the connection closes.
    ['length-past-end', 'closed', /connection closed by server after \d+ replies, in the middle of a reply/, '$100\\r\\nshort'],
  ];

  it.each(malformed)('malformed RESP (%s) is a %s error naming the connection and showing the bytes escaped, exit 1', async (mode, kind, reason, shown) => {
    const s = await serve(mode);
    const { run, result } = await runJson(load(engine, s.port), 20_000);
    expect(run.code).toBe(1);
    expect(result.failure.kind).toBe(kind);
    expect(result.failure.message).toMatch(/^connection 0 \(127\.0\.0\.1:\d+\)/);
    expect(result.failure.message).toMatch(reason);
    expect(result.failure.message).toContain(`"${shown}`);
    expect(result.requests).toBeGreaterThanOrEqual(AFTER);
    expect(result.requests).toBeLessThanOrEqual(AFTER + 1);
    expect(run.stderr).not.toMatch(STACK_TRACE);
    expect(run.stderr).not.toMatch(/ProtocolError|Uncaught|TypeError/);
  });

  it('the human output of a protocol error is one FAILED line with the counters above it, and the reason once, on stderr', async () => {
    const s = await serve('bad-type-byte');
    // The table's counters: without -q, whose short lines have none.
    const run = await runCli(load(engine, s.port).filter((a) => a !== '-q'), 20_000);
    expect(run.code).toBe(1);
    expect(run.stdout).toContain(`requests ${AFTER}/200`);
    const failed = run.stdout.split('\n').filter((l) => l.startsWith('FAILED'));
    expect(failed).toEqual([`FAILED (protocol): the figures above cover the ${AFTER} replies received`]);
    const reason = /connection 0 \(127\.0\.0\.1:\d+\): protocol error after 5 replies: unknown reply type byte at byte \d+ of the replies: "\?what\\r\\n"/;
    expect(run.stderr.trim().split('\n')).toEqual([expect.stringMatching(new RegExp(`^respbench: ${reason.source}`))]);
    // Said once on a terminal that shows both streams: not in the table as well.
    expect(run.stdout).not.toMatch(/protocol error after/);
    expect(run.stdout + run.stderr).not.toMatch(STACK_TRACE);
  });

  it('a server that stops answering ends the run at --timeout with the counters so far', async () => {
    const s = await serve('stall');
    const { run, result } = await runJson(load(engine, s.port, ['--timeout', '500ms']), 20_000);
    expect(run.code).toBe(1);
    expect(result.failure.kind).toBe('timeout');
    expect(result.failure.message).toMatch(/no reply within 500 ms \(--timeout\) after 5 replies/);
    expect(result.requests).toBe(AFTER);
    // 500 ms of silence plus a check interval, plus starting node: well under 3 s.
    expect(run.ms).toBeLessThan(3_000);
  });

  it('a stall in the middle of a reply shows the bytes of it that arrived', async () => {
    const s = await serve('stall-mid-reply');
    const { run, result } = await runJson(load(engine, s.port, ['--timeout', '500ms']), 20_000);
    expect(run.code).toBe(1);
    expect(result.failure.kind).toBe('timeout');
    expect(result.failure.message).toContain('no reply within 500 ms (--timeout) after 5 replies, in the middle of a reply (15 bytes of it received: "$40\\r\\n0123456789")');
    expect(run.ms).toBeLessThan(3_000);
  });

  it('a stall on one of several connections ends the whole run, other connections counted', async () => {
    const s = await serve('stall', { after: 50 });
    const { run, result } = await runJson(load(engine, s.port, ['--timeout', '500ms', '-c', '3', '--requests', '600']), 20_000);
    expect(run.code).toBe(1);
    expect(result.failure.kind).toBe('timeout');
    expect(result.requests).toBe(150);
    expect(run.ms).toBeLessThan(3_000);
  });

  it('error replies are counted, the first one shown, and the run goes on to the end: exit 3', async () => {
    const s = await serve('error-replies', { every: 10 });
    const { run, result } = await runJson(load(engine, s.port), 20_000);
    expect(run.code).toBe(3);
    expect(result.failure).toBeNull();
    expect(result.requests).toBe(200);
    expect(result.errors).toBe(20);
    expect(result.ok).toBe(180);
    expect(result.firstError).toBe('ERR injected fault');
    const human = await runCli(load(engine, s.port), 20_000);
    expect(human.code).toBe(3);
    expect(human.stdout).toContain('ERROR REPLIES: 20, first: ERR injected fault');
  });

  it('connections reset while others are still opening end the run cleanly (no uncaught error), exit 1', async () => {
    const s = await serve('reset-on-accept');
    const { run, result } = await runJson(load(engine, s.port, ['-c', '8']), 20_000);
    expect(run.code).toBe(1);
    expect(['closed', 'connect']).toContain(result.failure.kind);
    expect(result.failure.message).toMatch(/connection closed by server after 0 replies|connection reset|ECONNRESET/);
    expect(run.stderr).not.toMatch(STACK_TRACE);
  });

  it('a server that never accepts: connecting times out at --timeout, exit 1', async () => {
    const blackhole = await startNoAcceptServer();
    if (!blackhole) return;
    try {
      const run = await runCli(['--engine', engine, '--port', String(blackhole.port), '-c', '6', '--requests', '60', '--timeout', '500ms', '-q'], 20_000);
      expect(run.code).toBe(1);
      expect(run.stderr).toMatch(new RegExp(`connect to 127\\.0\\.0\\.1:${blackhole.port} timed out after 500 ms`));
      expect(run.ms).toBeLessThan(3_000);
    } finally {
      blackhole.stop();
    }
  });

  it('Ctrl-C while connections hang in connect ends the run at once: exit 130', async () => {
    const blackhole = await startNoAcceptServer();
    if (!blackhole) return;
    try {
      const started = Date.now();
      const pending = runCli(['--engine', engine, '--port', String(blackhole.port), '-c', '6', '--requests', '60', '--timeout', '30s', '-q'], 20_000);
      // runCli gives no handle on the child: find it by its unique port argument.
      // Past start-up and into connecting: its signal handlers are in place.
      await waitFor('respbench to start connecting', () => hasTcpSocketTo(pidOf(`--port ${blackhole.port}`), blackhole.port), 20_000);
      process.kill(pidOf(`--port ${blackhole.port}`), 'SIGINT');
      const run = await pending;
      expect(run.code).toBe(130);
      expect(run.stdout).toMatch(/FAILED \(interrupted\)/);
      expect(Date.now() - started).toBeLessThan(5_000);
    } finally {
      blackhole.stop();
    }
  });
});

describe.each(engines())('engine %s: what a server sends before any request is read, not lost', (engine) => {
  it.each([['-c', '1'], ['-c', '3'], ['-c', '3', '--rate', '200']])(
    'a server past maxclients (-ERR max number of clients reached, then close, at accept) with %s %s: its words are in the failure, exit 1',
    async (...more) => {
      const s = await serve('full-on-accept');
      const { run, result } = await runJson(load(engine, s.port, ['--requests', '100', ...more]), 20_000);
      expect(run.code, run.stderr).toBe(1);
      // Read as the first request's reply (an error reply) or as a reply no request asked for: the server's text either way.
      expect(`${result.firstError ?? ''} ${result.failure?.message ?? ''}`).toContain('ERR max number of clients');
      expect(run.stderr).not.toMatch(STACK_TRACE);
    },
  );
});

describe.each(engines())('engine %s: a run that got nothing is not a success', (engine) => {
  const nothing = (result: any) => {
    expect(result.complete).toBe(false);
    expect(result.requests).toBe(0);
    // Figures of a run that measured nothing are absent, not zeros.
    expect([result.opsPerSec, result.latencyUs, result.avgUsPerOp]).toEqual([null, null, null]);
  };

  it.each([
    ['close-on-accept', 0],
    ['close-after', 0],
  ])('--reconnect against a server that accepts and then closes (%s, after %i replies): reconnected sockets that bring no reply use up --reconnect-attempts; exit 1', async (mode, after) => {
    const s = await serve(mode, { after });
    const started = Date.now();
    const { run, result } = await runJson(load(engine, s.port, ['--requests', '20000', '--reconnect', '--reconnect-attempts', '4', '--reconnect-backoff', '10ms']), 20_000);
    expect(run.code).toBe(1);
    expect(result.failure.kind).toBe('closed');
    expect(result.failure.message).toMatch(/; not reconnected after 4 attempts \(--reconnect-attempts\): each connection opened again was closed before any reply$/);
    nothing(result);
    // The attempts' backoffs (0, 10, 20, 40 ms), not 20,000 requests lost a window at a time.
    expect(Date.now() - started).toBeLessThan(10_000);
    // The first connection and 4 attempts, and the one TLS handshake the CLI tries after a run
    // whose every connection closed before a reply (early-close.ts: "add --tls"?).
    expect(s.connections()).toBeLessThanOrEqual(6);
  });

  it('--reconnect, every request lost before any reply: exit 1 with the reason, not requests 0/N and exit 0', async () => {
    const s = await serve('close-after', { after: 0 });
    const { run, result } = await runJson(load(engine, s.port, ['--requests', '4', '--reconnect', '--reconnect-backoff', '10ms']), 20_000);
    expect(run.code).toBe(1);
    expect(result.failure).toEqual({ kind: 'closed', message: 'no request of 4 was answered: the server closed every connection first (4 requests lost, 0 reconnects)' });
    nothing(result);
  });
});
