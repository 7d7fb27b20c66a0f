/**
 * Signals before the load (issue 20 item 6): SIGINT/SIGTERM while respbench
 * waits on a server in a phase before any request is timed — asking a
 * cluster seed for its topology (run and capacity), the connect phase's
 * handshake — are acted on at once (exit 130/143, one line, no stack
 * trace), not when --timeout ends the wait. The target is a real TCP server
 * on loopback that accepts, reads and never answers.
 */
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STACK_TRACE, waitFor } from './faults/harness.js';
import { engines } from './helpers/engines.js';
import { spawnCli } from './helpers/servers.js';

/** Far longer than any wait here: a run that waits for it did not act on the signal. */
const TIMEOUT = ['--timeout', '20s'];
/** "Within 100 ms" on a quiet machine; this machine is shared with several builds. */
const ACT_WITHIN_MS = 1_500;

let silent: net.Server;
let port = 0;
/** Bytes the silent server has read, over every connection. */
let bytesRead = 0;
const sockets = new Set<net.Socket>();

beforeAll(async () => {
  silent = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('data', (d) => (bytesRead += d.length));
    socket.on('error', () => undefined);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  port = (silent.address() as net.AddressInfo).port;
});

afterAll(() => {
  for (const s of sockets) s.destroy();
  silent?.close();
});

const signals: Array<[NodeJS.Signals, number]> = [
  ['SIGINT', 130],
  ['SIGTERM', 143],
];

const PHASES: { what: string; args: () => string[] }[] = [
  { what: 'cluster discovery (a seed that never answers CLUSTER SHARDS)', args: () => ['--cluster', '-p', String(port), '-n', '1000'] },
  { what: 'capacity: cluster discovery', args: () => ['capacity', '--slo', 'p99<=1ms', '--cluster', '-p', String(port)] },
  { what: 'the connect phase (a handshake that is never answered)', args: () => ['-p', String(port), '-a', 'pw-unanswered', '-n', '1000'] },
];

describe.each(engines())('engine %s', (engine) => {
  describe.each(PHASES)('$what', ({ args }) => {
    it.each(signals)('%s is acted on at once: exit %i, one line, no stack trace', async (signal, code) => {
      const before = bytesRead;
      const { child, exited } = spawnCli([...args(), '--engine', engine, ...TIMEOUT]);
      // The request (CLUSTER SHARDS, HELLO/AUTH) has reached the server: respbench is waiting on its reply.
      await waitFor('respbench to wait on the silent server', () => bytesRead > before);
      const sentAt = Date.now();
      child.kill(signal);
      const out = await exited;
      const tookMs = Date.now() - sentAt;
      expect(out.code, out.stderr).toBe(code);
      expect(tookMs, `exit ${tookMs} ms after ${signal}`).toBeLessThan(ACT_WITHIN_MS);
      expect(out.stdout + out.stderr).not.toMatch(STACK_TRACE);
      // It says why it stopped (it exited without a word during discovery before), and shows no figures of zeros.
      expect(out.stdout + out.stderr).toMatch(new RegExp(`${signal}: interrupted|interrupted by ${signal}`));
      expect(out.stdout).not.toMatch(/ops\/s|0\.00/);
    });
  });
});
