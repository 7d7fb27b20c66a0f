/**
 * Transports other than plain TCP, through both engines, against real
 * redis-servers started here: TLS (on certificates made with openssl for
 * this test: a CA, a server certificate for localhost/127.0.0.1, a client
 * certificate, and a CA nobody trusts) and unix sockets. What reached the
 * server is the same bytes whatever the transport (DEBUG DIGEST parity), and
 * a transport that cannot be set up ends the run before any load with one
 * line naming why, exit 1.
 */
import { spawn, spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeCertificates } from '../packages/cli/src/certificates.js';
import { waitFor } from './faults/harness.js';
import { engines } from './helpers/engines.js';
import { CLI, freePort, hasTcpSocketTo, runCli, runJson, startRedis, startTlsRedis as startTlsRedisOn, waitForPort, type RedisServer, type TlsRedisServer } from './helpers/servers.js';

const ENGINES = engines();
let certs: string;
const file = (name: string) => path.join(certs, name);

/** A CA, a server certificate for localhost and 127.0.0.1 and a client certificate signed by it, and a second CA (the project's one certificate maker). */
function makeTestCertificates(): void {
  certs = mkdtempSync(path.join(tmpdir(), 'respbench-tls-'));
  makeCertificates(certs, { otherCa: true, client: true });
}

/** redis-server with its plain port (for redis-cli) and a TLS port on the server certificate. */
function startTlsRedis(extra: string[] = []): Promise<TlsRedisServer> {
  return startTlsRedisOn({ cert: file('server.pem'), key: file('server.key'), ca: file('ca.pem') }, extra);
}

/** Counters that depend only on the Plan, never on timing. */
const COUNTERS = ['requests', 'sets', 'gets', 'ok', 'errors', 'misses', 'mismatches', 'bytesOut', 'bytesIn', 'preloadRequests'] as const;
const counters = (r: any) => Object.fromEntries(COUNTERS.map((k) => [k, r[k]]));

const WORKLOAD = ['--mode', 'set', '-n', '20000', '-c', '3', '-P', '32', '-r', '3000', '-d', '1-300', '--seed', '21', '--timeout', '10s', '-q'];
const BIG_VALUES = ['--mode', 'set', '-n', '600', '-c', '2', '-P', '64', '-r', '200', '-d', '20000-70000', '--seed', '22', '--timeout', '10s', '-q'];

/** The one stderr line of a run that could not start, and its exit code. */
async function failureLine(args: string[]): Promise<{ code: number | null; line: string }> {
  const run = await runCli([...args, '-n', '100', '-q']);
  const lines = run.stderr.trim().split('\n');
  expect(lines, run.stderr).toHaveLength(1);
  return { code: run.code, line: lines[0] };
}

beforeAll(makeTestCertificates);
afterAll(() => {
  if (certs) rmSync(certs, { recursive: true, force: true });
});

describe('TLS', () => {
  let redis: TlsRedisServer;
  let mtls: TlsRedisServer;
  beforeAll(async () => {
    redis = await startTlsRedis();
    mtls = await startTlsRedis(['--tls-auth-clients', 'yes']);
  });
  afterAll(async () => {
    await redis?.stop();
    await mtls?.stop();
  });
  const tls = () => ['--port', String(redis.tlsPort), '--tls'];

  it('sends the same bytes through both engines over TLS as over plain TCP (DEBUG DIGEST)', async () => {
    redis.cli('FLUSHALL');
    const plain = await runJson(['--engine', 'js', '--port', String(redis.port), ...WORKLOAD]);
    expect(plain.result.failure).toBeNull();
    const want = redis.cli('DEBUG', 'DIGEST');
    for (const engine of ENGINES) {
      for (const args of [WORKLOAD, BIG_VALUES]) {
        redis.cli('FLUSHALL');
        const { run, result } = await runJson(['--engine', engine, ...tls(), '--cacert', file('ca.pem'), ...args], 90_000);
        expect(result.engine, run.stderr).toBe(engine);
        expect(result.failure, `${engine}: ${JSON.stringify(result.failure)}`).toBeNull();
        expect(result.complete).toBe(true);
        if (args === WORKLOAD) {
          expect(redis.cli('DEBUG', 'DIGEST'), engine).toBe(want);
          expect(counters(result), engine).toEqual(counters(plain.result));
        } else {
          expect(result.sets).toBe(600);
        }
      }
    }
    // Large values both ways, verified: records split across reads.
    for (const engine of ENGINES) {
      const { result } = await runJson(['--engine', engine, ...tls(), '--cacert', file('ca.pem'), '--mode', 'get', '--verify-get', '-n', '400', '-c', '2', '-P', '16', '-r', '100', '-d', '30000-90000', '--seed', '23', '-q']);
      expect(result.failure, engine).toBeNull();
      expect(result.mismatches, engine).toBe(0);
      expect(result.misses, engine).toBe(0);
    }
  });

  it('trusts a CA given by --cacertdir, and --tls-ciphersuites / --tls-ciphers pick what is offered', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'respbench-cadir-'));
    try {
      // As OpenSSL (redis-cli) reads a CA folder: the CAs under their subject's hash (openssl rehash).
      copyFileSync(file('other-ca.pem'), path.join(dir, 'other-ca.pem'));
      copyFileSync(file('ca.pem'), path.join(dir, 'ca.pem'));
      writeFileSync(path.join(dir, 'notes.txt'), 'not a certificate\n');
      expect(spawnSync('openssl', ['rehash', dir]).status).toBe(0);
      for (const engine of ENGINES) {
        for (const extra of [['--cacertdir', dir], ['--cacert', file('ca.pem'), '--tls-ciphersuites', 'TLS_CHACHA20_POLY1305_SHA256'], ['--cacert', file('ca.pem'), '--tls-ciphers', 'ECDHE-RSA-AES256-GCM-SHA384']]) {
          const { run, result } = await runJson(['--engine', engine, ...tls(), ...extra, '--mode', 'set', '-n', '500', '-q']);
          expect(result.failure, `${engine} ${extra.join(' ')}: ${run.stderr}`).toBeNull();
          expect(result.sets).toBe(500);
        }
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses a server certificate no trusted CA signed, naming why; --insecure goes on', async () => {
    for (const engine of ENGINES) {
      for (const extra of [[], ['--cacert', file('other-ca.pem')]]) {
        const { code, line } = await failureLine(['--engine', engine, ...tls(), ...extra]);
        expect(code, engine).toBe(1);
        expect(line, engine).toBe(`respbench: TLS handshake with 127.0.0.1:${redis.tlsPort} failed: certificate not trusted (not signed by a CA in --cacert/--cacertdir or the system's roots; --insecure skips the check)`);
      }
      const { run, result } = await runJson(['--engine', engine, ...tls(), '--insecure', '--mode', 'set', '-n', '300', '-q']);
      expect(result.failure, `${engine}: ${run.stderr}`).toBeNull();
      expect(result.sets).toBe(300);
    }
  });

  it('checks the certificate against --sni (the name sent) and names a hostname mismatch', async () => {
    for (const engine of ENGINES) {
      // The certificate is for localhost: sent as SNI and checked, it passes.
      const { run, result } = await runJson(['--engine', engine, ...tls(), '--cacert', file('ca.pem'), '--sni', 'localhost', '--mode', 'set', '-n', '300', '-q']);
      expect(result.failure, `${engine}: ${run.stderr}`).toBeNull();
      expect(result.plan.tls.sni).toBe('localhost');
      const { code, line } = await failureLine(['--engine', engine, ...tls(), '--cacert', file('ca.pem'), '--sni', 'db.example.test']);
      expect(code, engine).toBe(1);
      expect(line, engine).toBe(`respbench: TLS handshake with 127.0.0.1:${redis.tlsPort} failed: hostname mismatch (the server's certificate is not valid for "db.example.test"; --sni sets the name checked)`);
    }
  });

  it('gives a client certificate to a server that requires one; without one the run ends naming the alert the server sent', async () => {
    const base = ['--port', String(mtls.tlsPort), '--tls', '--cacert', file('ca.pem')];
    for (const engine of ENGINES) {
      const { run, result } = await runJson(['--engine', engine, ...base, '--cert', file('client.pem'), '--key', file('client.key'), '--mode', 'set', '-n', '300', '-q']);
      expect(result.failure, `${engine}: ${run.stderr}`).toBeNull();
      expect(result.sets).toBe(300);
      // TLS 1.3: the server refuses the missing certificate after the
      // client's side of the handshake, with an alert on the first read.
      const { code, line } = await failureLine(['--engine', engine, ...base, '--mode', 'set']);
      expect(code, engine).toBe(1);
      expect(line, engine).toMatch(/TLS alert "certificate required" from the server: it requires a client certificate \(--cert\/--key\)$/);
    }
  });

  it('gives up on a server that never answers the handshake (its own timeout)', async () => {
    const silent = net.createServer(() => {});
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const port = (silent.address() as net.AddressInfo).port;
    try {
      for (const engine of ENGINES) {
        const { code, line } = await failureLine(['--engine', engine, '--port', String(port), '--tls', '--timeout', '300ms']);
        expect(code, engine).toBe(1);
        expect(line, engine).toBe(`respbench: TLS handshake with 127.0.0.1:${port} failed: handshake timeout after 300 ms (is that port speaking TLS?)`);
      }
    } finally {
      silent.close();
    }
  });

  it('Ctrl-C during a TLS handshake that hangs ends the run at once: exit 130', async () => {
    const silent = net.createServer(() => {});
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const port = (silent.address() as net.AddressInfo).port;
    try {
      for (const engine of ENGINES) {
        const child = spawn(process.execPath, [CLI, '--engine', engine, '--port', String(port), '--tls', '--timeout', '30s', '-n', '10', '-q'], { stdio: ['ignore', 'pipe', 'pipe'] });
        let stdout = '';
        child.stdout.on('data', (d) => (stdout += d));
        const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
        // Connected (the server never answers the ClientHello): the handshake hangs, the signal handlers are in.
        await waitFor('respbench to connect', () => hasTcpSocketTo(child.pid!, port), 20_000);
        const started = Date.now();
        child.kill('SIGINT');
        const code = await exited;
        expect(code, `${engine}: ${stdout}`).toBe(130);
        expect(stdout, engine).toMatch(/FAILED \(interrupted\)/);
        expect(Date.now() - started, engine).toBeLessThan(3_000);
      }
    } finally {
      silent.close();
    }
  });

  it('refuses TLS flags it cannot use, naming the flag and file (exit 2)', async () => {
    const cases: Array<[string[], RegExp]> = [
      [['--cacert', file('ca.pem')], /^respbench: --cacert needs --tls$/],
      [['--tls', '--cacert', file('missing.pem')], /^respbench: --cacert: no such file ".*missing\.pem"$/],
      [['--tls', '--cacertdir', file('ca.pem')], /^respbench: --cacertdir: ".*ca\.pem" is not a folder$/],
      [['--tls', '--cert', file('client.pem')], /^respbench: --cert and --key go together$/],
      [['--tls', '--tls-ciphers', 'RC4-MD5'], /^respbench: --tls-ciphers: "RC4-MD5" is not a cipher both engines have; choose from /],
      [['--tls', '-s', file('redis.sock')], /^respbench: --tls does not go with -s\/--socket/],
      [['--tls', '--embedded'], /^respbench: --tls does not go with --embedded \(the demo server listens on plain TCP\)$/],
      [['-s', file('redis.sock'), '--embedded'], /^respbench: -s\/--socket does not go with --embedded/],
    ];
    for (const [args, want] of cases) {
      const run = await runCli(['--port', String(redis.tlsPort), ...args, '-n', '10']);
      expect(run.code, args.join(' ')).toBe(2);
      expect(run.stderr.trim(), args.join(' ')).toMatch(want);
    }
  });
});

describe('unix sockets', () => {
  let redis: RedisServer;
  let dir: string;
  let sock: string;
  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'respbench-unix-'));
    sock = path.join(dir, 'redis.sock');
    redis = await startRedis(['--unixsocket', sock, '--unixsocketperm', '700']);
  });
  afterAll(async () => {
    await redis?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('-s sends the same bytes through both engines as plain TCP (DEBUG DIGEST)', async () => {
    redis.cli('FLUSHALL');
    const plain = await runJson(['--engine', 'js', '--port', String(redis.port), ...WORKLOAD]);
    expect(plain.result.failure).toBeNull();
    const want = redis.cli('DEBUG', 'DIGEST');
    for (const engine of ENGINES) {
      redis.cli('FLUSHALL');
      // --port is ignored with -s: 1 would refuse.
      const { run, result } = await runJson(['--engine', engine, '-s', sock, '--port', '1', ...WORKLOAD]);
      expect(result.engine, run.stderr).toBe(engine);
      expect(result.failure, `${engine}: ${JSON.stringify(result.failure)}`).toBeNull();
      expect(redis.cli('DEBUG', 'DIGEST'), engine).toBe(want);
      expect(counters(result), engine).toEqual(counters(plain.result));
      expect(result.plan.socket).toBe(sock);
    }
  });

  it('names the socket in the header', async () => {
    for (const engine of ENGINES) {
      const run = await runCli(['--engine', engine, '--socket', sock, '--mode', 'set', '-n', '100']);
      expect(run.code, run.stderr).toBe(0);
      expect(run.stdout).toContain(`target ${sock} (unix socket)`);
    }
  });

  it('a socket path nobody listens on is one line and exit 1', async () => {
    for (const engine of ENGINES) {
      const missing = path.join(dir, 'nobody.sock');
      const { code, line } = await failureLine(['--engine', engine, '-s', missing]);
      expect(code, engine).toBe(1);
      expect(line, engine).toBe(`respbench: cannot connect to unix socket ${missing}: no such socket (is the server listening on it?)`);
    }
  });
});

describe('a study', () => {
  let redis: TlsRedisServer;
  let work: string;
  beforeAll(async () => {
    redis = await startTlsRedis();
    work = mkdtempSync(path.join(tmpdir(), 'respbench-transport-study-'));
  });
  afterAll(async () => {
    await redis?.stop();
    rmSync(work, { recursive: true, force: true });
  });

  it('runs Redis presets over TLS (a certificate it makes) and a unix socket, and an address target with tls keys, in both engines', async () => {
    const study = path.join(work, 'transport.yaml');
    writeFileSync(
      study,
      `name: transport
rounds: 1
modes: [set, get]
defaults: { requests: 3000, pipeline: 16, keyspace: 500, verifyGet: true }
groups:
  - title: transports
    scenarios:
      - { name: tls_preset,  target: { redis: none, tls: true } }
      - { name: unix_preset, target: { redis: none, socket: true } }
      - { name: tls_address, target: { address: '127.0.0.1:${redis.tlsPort}', tls: { cacert: '${file('ca.pem')}', sni: localhost } } }
`,
    );
    for (const engine of ENGINES) {
      const out = path.join(work, `out-${engine}`);
      const run = await runCli(['study', study, '--out', out, '--engine', engine, '-q'], 120_000);
      expect(run.code, run.stderr).toBe(0);
      const md = spawnSync('sh', ['-c', `cat "${out}"/*_detail_*.csv`], { encoding: 'utf8' }).stdout;
      const rows = md.trim().split('\n');
      expect(rows, md).toHaveLength(7);
      expect(md).toContain('redis preset none (TLS)');
      expect(md).toContain('redis preset none (unix socket)');
      expect(md).toContain(`127.0.0.1:${redis.tlsPort} (TLS)`);
      expect(rows.slice(1).every((r) => r.includes(',ok,')), md).toBe(true);
    }
  });

  it('refuses transport flags among the run flags and names the target key to use', async () => {
    const bad = path.join(work, 'bad.yaml');
    writeFileSync(bad, `name: bad\ndefaults: { cacert: ca.pem }\ngroups:\n  - title: t\n    scenarios:\n      - { name: a, target: { redis: none } }\n`);
    const run = await runCli(['study', bad]);
    expect(run.code).toBe(2);
    expect(run.stderr.trim()).toBe(`respbench: ${bad}:2: cacert cannot be set in a study file (the target gives it: target: { address: 'HOST:PORT', tls: { cacert: FILE } } or { socket: PATH })`);
  });
});
