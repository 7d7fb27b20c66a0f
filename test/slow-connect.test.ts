/**
 * A connect phase that takes seconds (issue 20 item 12: fakeredis took about
 * 7 s to take 50 connections) is reported as such, in both engines: the
 * human output says "slow connect: … s", and --json has connectElapsedNs.
 * The target is a real RESP server on loopback that holds its reply to the
 * handshake (AUTH) for 1.2 s, then answers SET/GET at once.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { engines } from './helpers/engines.js';
import { startRespServer, type RespServer } from './helpers/resp-server.js';
import { runCli } from './helpers/servers.js';

const HOLD_MS = 1_200;
let server: RespServer;

beforeAll(async () => {
  const store = new Map<string, string>();
  server = await startRespServer(
    (args) => {
      const name = args[0].toUpperCase();
      if (name === 'SET') {
        store.set(args[1], args[2]);
        return '+OK\r\n';
      }
      if (name === 'GET') {
        const v = store.get(args[1]);
        return v === undefined ? '$-1\r\n' : `$${Buffer.byteLength(v)}\r\n${v}\r\n`;
      }
      return '+OK\r\n';
    },
    (args) => (args[0].toUpperCase() === 'AUTH' ? HOLD_MS : 0),
  );
});
afterAll(() => server?.close());

describe.each(engines())('engine %s', (engine) => {
  const bench = (extra: string[]) => runCli(['--engine', engine, '-p', String(server.port), '-a', 'pw-slow', '-n', '2000', '-c', '2', '-r', '100', '--mode', 'set', '--timeout', '10s', ...extra]);

  it('says the connect phase took seconds, apart from the figures', async () => {
    const run = await bench([]);
    expect(run.code, run.stderr).toBe(0);
    const said = /slow connect: (\d+\.\d+) s to open 2 connections and their handshakes/.exec(run.stdout);
    expect(said, run.stdout).not.toBeNull();
    expect(Number(said![1])).toBeGreaterThanOrEqual(HOLD_MS / 1000 - 0.05);
  });

  it('--json has connectElapsedNs; elapsed (the measured phase) does not hold it', async () => {
    const run = await bench(['--json']);
    expect(run.code, run.stderr).toBe(0);
    const r = JSON.parse(run.stdout);
    expect(r.connectElapsedNs).toBeGreaterThanOrEqual((HOLD_MS - 50) * 1e6);
    expect(r.elapsedNs).toBeLessThan(HOLD_MS * 1e6);
  });
});

it('a connect phase of milliseconds says nothing', async () => {
  const plain = await startRespServer(() => '+OK\r\n');
  try {
    const run = await runCli(['-p', String(plain.port), '-n', '500', '--mode', 'set']);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).not.toMatch(/slow connect/);
  } finally {
    plain.close();
  }
});
