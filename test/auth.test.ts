/**
 * Logging in before the clock (issue 12): -a/--pass, --user (ACL), --dbnum,
 * -3/--resp3, -u/--uri and REDISCLI_AUTH against a real redis-server with
 * requirepass and two ACL users, through both engines. A failed handshake is
 * one line and exit 1 before any load; NOAUTH/NOPERM during a run ends it at
 * once; the password shows in no output of a run or a study.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startFaultServer } from './faults/fault-server.mjs';
import { bothEngines, engines } from './helpers/engines.js';
import { runCli, useRedis } from './helpers/servers.js';

const PASSWORD = 'Pw-4e1f9c-topsecret';
const FULL_PW = 'full-7d2a-secretpw';
const LIMITED_PW = 'lim-93bc-secretpw';
const SECRETS = [PASSWORD, FULL_PW, LIMITED_PW];

const redis = useRedis(['--requirepass', PASSWORD]);

/** redis-cli as the default user (with the password, no warning). */
function cli(...args: string[]): string {
  return redis.current.cli('-a', PASSWORD, '--no-auth-warning', ...args);
}

let usersMade = false;
function ensureUsers(): void {
  if (usersMade) return;
  cli('ACL', 'SETUSER', 'full', 'on', `>${FULL_PW}`, '~*', '&*', '+@all');
  cli('ACL', 'SETUSER', 'limited', 'on', `>${LIMITED_PW}`, '~bench:*', '+get', '+set');
  usersMade = true;
}

/** Every output of a run must be free of every password. */
function expectNoSecret(...texts: string[]): void {
  for (const t of texts) for (const s of SECRETS) expect(t.includes(s), `a password shows in:\n${t.slice(0, 2000)}`).toBe(false);
}

/** The human output (header and table: what a password must not show in), so without -q. */
function bench(engine: string, args: string[], env: NodeJS.ProcessEnv = process.env) {
  return runCli(['--engine', engine, '--port', String(redis.current.port), '--timeout', '10s', ...args], 90_000, env);
}

async function benchJson(engine: string, args: string[], env?: NodeJS.ProcessEnv) {
  const run = await bench(engine, [...args, '--json'], env);
  expectNoSecret(run.stdout, run.stderr);
  let result: any = null;
  try {
    result = JSON.parse(run.stdout);
  } catch {
    throw new Error(`no JSON (exit ${run.code}): ${run.stderr}${run.stdout}`);
  }
  return { run, result };
}

const SMALL = ['-n', '2000', '-c', '2', '-P', '16', '-r', '500', '--seed', '5'];

describe.each(engines())('engine %s', (engine) => {
  it('requirepass: -a logs in, get --verify-get passes, --json shows the password as ***', async () => {
    const { run, result } = await benchJson(engine, ['-a', PASSWORD, '--mode', 'get', '--verify-get', ...SMALL]);
    expect(run.code, run.stderr).toBe(0);
    expect(result.failure).toBeNull();
    expect(result.misses).toBe(0);
    expect(result.plan.password).toBe('***');
    const human = await bench(engine, ['-a', PASSWORD, '--mode', 'set', ...SMALL]);
    expect(human.code, human.stderr).toBe(0);
    expect(human.stdout).toMatch(/auth default/);
    expectNoSecret(human.stdout, human.stderr);
  });

  it('REDISCLI_AUTH gives the password without a flag', async () => {
    const { run, result } = await benchJson(engine, ['--mode', 'set', ...SMALL], { ...process.env, REDISCLI_AUTH: PASSWORD });
    expect(run.code, run.stderr).toBe(0);
    expect(result.requests).toBe(2000);
  });

  it('a wrong password ends the run before any load: one line, exit 1', async () => {
    const wrong = 'wrong-secret-83hd';
    const run = await bench(engine, ['-a', wrong, '--mode', 'set', ...SMALL]);
    expect(run.code).toBe(1);
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(run.stderr).toMatch(/authentication failed for user 'default': WRONGPASS/);
    expect(run.stdout).not.toMatch(/ops\/s/);
    expect(run.stdout + run.stderr).not.toContain(wrong);
  });

  it('no password: the first NOAUTH ends the run at once, with that message instead of a rate', async () => {
    const { run, result } = await benchJson(engine, ['--mode', 'set', ...SMALL]);
    expect(run.code).toBe(1);
    expect(result.failure.kind).toBe('auth');
    expect(result.failure.message).toMatch(/requires a password \(NOAUTH/);
    expect(result.requests).toBeLessThan(2000);
    const human = await bench(engine, ['--mode', 'set', ...SMALL]);
    expect(human.stdout).not.toMatch(/ops\/s/);
    expect(human.stderr).toMatch(/NOAUTH/);
  });

  it('NOAUTH from a server in the middle of a run ends it at once', async () => {
    const server = await startFaultServer({ mode: 'error-replies', every: 300, errorText: 'NOAUTH Authentication required.' });
    try {
      const run = await runCli(['--engine', engine, '--port', String(server.port), '-q', '--json', '--mode', 'set', '-n', '100000', '-P', '4'], 60_000);
      const result = JSON.parse(run.stdout);
      expect(run.code).toBe(1);
      expect(result.failure.kind).toBe('auth');
      expect(result.failure.message).toMatch(/after 300 replies/);
      expect(result.requests).toBeLessThan(400);
    } finally {
      await server.close();
    }
  });

  it('ACL users: full rights with --dbnum, restricted on its keys passes, a forbidden command is the NOPERM line', async () => {
    ensureUsers();
    const full = await benchJson(engine, ['--user', 'full', '-a', FULL_PW, '--dbnum', '2', '--mode', 'mixed', ...SMALL]);
    expect(full.run.code, full.run.stderr).toBe(0);
    const limited = await benchJson(engine, ['--user', 'limited', '-a', LIMITED_PW, '--mode', 'get', '--verify-get', ...SMALL]);
    expect(limited.run.code, limited.run.stderr).toBe(0);
    expect(limited.result.misses).toBe(0);
    const forbidden = await bench(engine, ['--user', 'limited', '-a', LIMITED_PW, '--mode', 'set', '--set-cmd', 'HSET __key__ f __data__', ...SMALL]);
    expect(forbidden.code).toBe(1);
    expect(forbidden.stderr).toMatch(/user 'limited' is not allowed this \(NOPERM.*'hset'/);
    expect(forbidden.stdout).not.toMatch(/ops\/s/);
    const otherKeys = await bench(engine, ['--user', 'limited', '-a', LIMITED_PW, '--mode', 'set', '--key-prefix', 'other:', ...SMALL]);
    expect(otherKeys.code).toBe(1);
    expect(otherKeys.stderr).toMatch(/NOPERM/);
    const select = await bench(engine, ['--user', 'limited', '-a', LIMITED_PW, '--dbnum', '3', '--mode', 'set', ...SMALL]);
    expect(select.code).toBe(1);
    expect(select.stderr).toMatch(/user 'limited' may not run SELECT \(NOPERM/);
    expectNoSecret(forbidden.stdout, forbidden.stderr, otherKeys.stderr, select.stdout, select.stderr);
  });

  it('--dbnum 3: the writes land in database 3; an unknown database is one line', async () => {
    cli('FLUSHALL');
    const { run } = await benchJson(engine, ['-a', PASSWORD, '--dbnum', '3', '--mode', 'set', ...SMALL]);
    expect(run.code, run.stderr).toBe(0);
    // 2000 uniform draws over 500 keys hit nearly all of them.
    expect(Number(cli('-n', '3', 'DBSIZE'))).toBeGreaterThan(450);
    expect(Number(cli('-n', '0', 'DBSIZE'))).toBe(0);
    const bad = await bench(engine, ['-a', PASSWORD, '--dbnum', '99', '--mode', 'set', ...SMALL]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/cannot select database 99: ERR DB index is out of range/);
  });

  it('-3/--resp3: get --verify-get and mixed pass over RESP3 (HELLO 3 with AUTH)', async () => {
    const get = await benchJson(engine, ['-3', '-a', PASSWORD, '--mode', 'get', '--verify-get', ...SMALL]);
    expect(get.run.code, get.run.stderr).toBe(0);
    expect(get.result.misses).toBe(0);
    cli('FLUSHALL');
    const mixed = await benchJson(engine, ['--resp3', '-a', PASSWORD, '--mode', 'mixed', '-n', '4000', '-r', '100000', '--seed', '9']);
    expect(mixed.run.code, mixed.run.stderr).toBe(0);
    expect(mixed.result.misses).toBeGreaterThan(0);
    expect(mixed.result.errors).toBe(0);
  });

  it('--uri redis://user:pass@host:port/db logs in and selects; the URI is shown with ***', async () => {
    ensureUsers();
    cli('FLUSHALL');
    const uri = `redis://full:${FULL_PW}@127.0.0.1:${redis.current.port}/4`;
    const run = await runCli(['--engine', engine, '-q', '-u', uri, '--mode', 'set', ...SMALL], 60_000);
    expect(run.code, run.stderr).toBe(0);
    expect(Number(cli('-n', '4', 'DBSIZE'))).toBeGreaterThan(450);
    expectNoSecret(run.stdout, run.stderr);
    const bad = await runCli(['--engine', engine, '-u', `redis://full:${FULL_PW}@127.0.0.1:${redis.current.port}/x`], 60_000);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('redis://full:***@');
    expectNoSecret(bad.stdout, bad.stderr);
  });
});

describe('a handshake that is never answered', () => {
  it.each(engines())('%s: gives up after --timeout with one line', async (engine) => {
    const server = await startFaultServer({ mode: 'stall', after: 0 });
    try {
      const run = await runCli(['--engine', engine, '--port', String(server.port), '-q', '-a', PASSWORD, '--timeout', '300ms', '-n', '10'], 30_000);
      expect(run.code).toBe(1);
      expect(run.stderr).toMatch(/no reply to the handshake \(AUTH\) within 300 ms \(--timeout\)/);
      expectNoSecret(run.stdout, run.stderr);
    } finally {
      await server.close();
    }
  });
});

describe('parity', () => {
  const both = engines();
  it.skipIf(!bothEngines())('js and native leave the same dataset with AUTH + SELECT (DEBUG DIGEST)', async () => {
    const digests: string[] = [];
    for (const engine of both) {
      cli('FLUSHALL');
      const args = ['-a', PASSWORD, '--dbnum', '5', '--mode', 'set', '-d', '4-100', '-n', '6000', '-c', '3', '-r', '3000', '--seed', '21'];
      const { run } = await benchJson(engine, args);
      expect(run.code, run.stderr).toBe(0);
      expect(Number(cli('-n', '5', 'DBSIZE'))).toBeGreaterThan(0);
      digests.push(cli('DEBUG', 'DIGEST'));
    }
    expect(digests[1]).toBe(digests[0]);
  });
});

describe('secrets in a study', () => {
  const dirs: string[] = [];
  afterAll(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it('a study against an address with pass: and a redis preset with user:/pass: shows no password anywhere', async () => {
    ensureUsers();
    const dir = mkdtempSync(path.join(tmpdir(), 'respbench-auth-study-'));
    dirs.push(dir);
    const file = path.join(dir, 'auth.yaml');
    writeFileSync(
      file,
      [
        'name: auth',
        'rounds: 1',
        'modes: [set, get]',
        'defaults: { requests: 2000, connections: 2, verifyGet: true }',
        'scenarios:',
        `  - { name: address, target: { address: '127.0.0.1:${redis.current.port}', user: full, pass: '${FULL_PW}', dbnum: 6 } }`,
        `  - { name: uri, target: { uri: 'redis://${PASSWORD}@127.0.0.1:${redis.current.port}/7' } }`,
        `  - { name: preset, target: { redis: none, user: bench, pass: '${LIMITED_PW}' } }`,
        '',
      ].join('\n'),
    );
    const out = path.join(dir, 'out');
    const run = await runCli(['study', file, '--out', out, '--engine', engines()[engines().length - 1]], 120_000);
    expect(run.code, run.stderr + run.stdout).toBe(0);
    expect(Number(cli('-n', '6', 'DBSIZE'))).toBeGreaterThan(0);
    expect(Number(cli('-n', '7', 'DBSIZE'))).toBeGreaterThan(0);
    const files = readdirSync(out);
    expect(files.some((f) => f.endsWith('.csv'))).toBe(true);
    expect(files.some((f) => f.endsWith('.html'))).toBe(true);
    expectNoSecret(run.stdout, run.stderr, ...files.map((f) => readFileSync(path.join(out, f), 'utf8')));
  });
});
