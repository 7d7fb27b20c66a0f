/**
 * Flag values to a Plan: the defaults, the parsers, and every bad value as a
 * UsageError naming its flag in one line. The CLI-level cases (commander's
 * own errors, the suite's flags) go through `main` in this process;
 * test/bad-input.test.ts keeps a few of them end to end.
 */
import { Command } from 'commander';
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeCertificates, type Certificates } from '../src/certificates.js';
import { main } from '../src/cli.js';
import { addRunOptions } from '../src/run-options.js';
import { rampOpenAtMs } from '../src/engine-js/plan.js';
import { buildPlan, keylessMixCommands, MODES, type RawRunOptions } from '../src/validate.js';
import { parseDurationMs, parseDurationNs, parseHost, parseHostPort, parseValueSize } from '../src/flag-values.js';
import { parseServiceTime } from '../src/serve/command.js';
import { parseSlo } from '../src/capacity/slo.js';
import { UsageError } from '../src/usage-error.js';

/** The flag values commander hands over when `args` are given. */
function raw(args: string[] = []): RawRunOptions {
  const cmd = addRunOptions(new Command()).exitOverride();
  cmd.parse(args, { from: 'user' });
  return cmd.opts() as RawRunOptions;
}

function usageError(run: () => unknown): UsageError {
  try {
    run();
  } catch (err) {
    if (err instanceof UsageError) return err;
    throw err;
  }
  throw new Error('expected a UsageError');
}

describe('transport flags', () => {
  const here = new URL(import.meta.url).pathname;
  const noCertificates = new URL('.', import.meta.url).pathname;
  // Real certificate files: their contents are read (and checked) too.
  let certs: Certificates;
  /** A CA folder as `openssl rehash` leaves it (the CA under HASH.0), and one with the CA under its own name only. */
  let folder = '';
  let unhashed = '';
  beforeAll(() => {
    certs = makeCertificates(mkdtempSync(path.join(tmpdir(), 'respbench-validate-tls-')), { client: true });
    folder = path.join(certs.dir, 'cadir');
    unhashed = path.join(certs.dir, 'plain-cadir');
    const hash = spawnSync('openssl', ['x509', '-hash', '-noout', '-in', certs.ca], { encoding: 'utf8' }).stdout.trim();
    for (const [dir, name] of [[folder, `${hash}.0`], [unhashed, 'ca.pem']]) {
      mkdirSync(dir);
      copyFileSync(certs.ca, path.join(dir, name));
    }
  });
  afterAll(() => {
    if (certs) rmSync(certs.dir, { recursive: true, force: true });
  });

  it('reads -s and the TLS flags into plan.socket and plan.tls', () => {
    expect(buildPlan({ ...raw(['-s', '/run/redis.sock']), seed: '1' }).plan).toMatchObject({ socket: '/run/redis.sock', tls: null });
    const { ca } = certs;
    const { cert, key } = certs.client!;
    const { plan } = buildPlan(raw(['--tls', '--cacert', ca, '--cacertdir', folder, '--cert', cert, '--key', key, '--insecure', '--sni', 'db.example', '--tls-ciphers', 'ECDHE-RSA-AES128-GCM-SHA256', '--tls-ciphersuites', 'TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384']));
    expect(plan.socket).toBeNull();
    expect(plan.tls).toEqual({ cacert: ca, cacertdir: folder, cert, key, insecure: true, sni: 'db.example', ciphers: 'ECDHE-RSA-AES128-GCM-SHA256', ciphersuites: 'TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384' });
    expect(buildPlan(raw(['--tls'])).plan.tls).toEqual({ cacert: null, cacertdir: null, cert: null, key: null, insecure: false, sni: null, ciphers: null, ciphersuites: null });
  });

  it('names the flag and the file of every bad transport value', () => {
    const cases: Array<[string[], string]> = [
      [['--insecure'], '--insecure needs --tls'],
      [['--sni', 'x'], '--sni needs --tls'],
      [['--tls', '--cacert', '/nonexistent/ca.pem'], '--cacert: no such file "/nonexistent/ca.pem"'],
      [['--tls', '--cacertdir', here], `--cacertdir: "${here}" is not a folder`],
      [['--tls', '--key', here], '--cert and --key go together'],
      [['--tls', '--sni', 'a b'], '--sni must be a host name (got "a b")'],
      [['--tls', '--tls-ciphersuites', 'TLS_AES_128_CCM_SHA256'], '--tls-ciphersuites: "TLS_AES_128_CCM_SHA256" is not a cipher both engines have; choose from TLS_AES_128_GCM_SHA256, TLS_AES_256_GCM_SHA384, TLS_CHACHA20_POLY1305_SHA256'],
      [['--tls', '-s', '/x.sock'], '--tls does not go with -s/--socket (TLS is over TCP)'],
      [['-s', ' '], '-s/--socket must be the path of a unix socket (got " ")'],
      [['--tls', '--cacert', here], `--cacert: "${here}" holds no PEM certificate (-----BEGIN CERTIFICATE-----)`],
      [['--tls', '--cacertdir', noCertificates], `--cacertdir: "${noCertificates}" holds no PEM certificate`],
      [['--tls', '--cacertdir', unhashed], `--cacertdir: "${unhashed}" holds certificates, but none where OpenSSL looks a CA up (under its subject's hash: ca.pem as ${readdirSync(folder)[0]}), so redis-cli and redis-server would not find them either: run openssl rehash on the folder`],
      [['--tls', '--cert', here, '--key', here], `--cert: "${here}" holds no PEM certificate (-----BEGIN CERTIFICATE-----)`],
      [['--tls', '--cert', certs?.client?.cert ?? '', '--key', certs?.ca ?? ''], `--key: "${certs?.ca}" holds no PEM private key (-----BEGIN PRIVATE KEY-----)`],
      [['--tls', '--cert', certs?.client?.cert ?? '', '--key', certs?.key ?? ''], `--key: "${certs?.key}" is not the private key of the certificate in --cert "${certs?.client?.cert}" (CN=respbench client)`],
    ];
    for (const [args, message] of cases) expect(usageError(() => buildPlan(raw(args))).message, args.join(' ')).toBe(message);
  });
});

describe('buildPlan', () => {
  it('turns the built-in defaults into the documented Plan', () => {
    const { plan, engine } = buildPlan({ ...raw(), seed: '7' });
    expect(engine).toBe('auto');
    expect(plan).toEqual({
      host: '127.0.0.1',
      port: 6379,
      socket: null,
      tls: null,
      connections: 1,
      pipeline: 64,
      requests: 1_000_000,
      mode: 'mixed',
      keyspace: 100_000,
      keyPattern: 'uniform',
      keyStddev: null,
      zipfExponent: 0.99,
      valueSizeMin: 32,
      valueSizeMax: 32,
      setRatio: 50,
      setCmd: 'SET',
      getCmd: 'GET',
      keyPrefix: 'bench:key:',
      literalCommands: false,
      seed: 7,
      verifyGet: false,
      preload: true,
      threads: 1,
      timeoutMs: 10_000,
      durationMs: 0,
      warmupMs: 0,
      rate: 0,
      user: null,
      password: null,
      dbnum: null,
      resp3: false,
    });
  });

  it('reads every flag', () => {
    const { plan, engine } = buildPlan(
      raw(['--host', 'db', '-p', '7000', '--mode', 'get', '-n', '5', '-P', '2', '-r', '9', '-d', '10-20', '--set-ratio', '30', '--seed', '0']
        .concat(['-c', '3', '--threads', '4', '--engine', 'js', '--timeout', '0', '--no-preload', '--duration', '2m', '--warmup', '500ms', '--rate', '1.5'])
        .concat(['--key-pattern', 'gaussian', '--key-stddev', '2.5', '--verify-get', '--key-prefix', 'k:'])),
    );
    expect(engine).toBe('js');
    expect(plan).toMatchObject({
      host: 'db',
      port: 7000,
      mode: 'get',
      requests: 5,
      pipeline: 2,
      keyspace: 9,
      valueSizeMin: 10,
      valueSizeMax: 20,
      setRatio: 30,
      seed: 0,
      connections: 3,
      threads: 4,
      timeoutMs: 0,
      preload: false,
      durationMs: 120_000,
      warmupMs: 500,
      rate: 1.5,
      keyPattern: 'gaussian',
      keyStddev: 2.5,
      verifyGet: true,
      keyPrefix: 'k:',
    });
  });

  it('takes the seed from the clock when none is given', () => {
    const { plan } = buildPlan(raw());
    expect(Number.isInteger(plan.seed) && plan.seed >= 0 && plan.seed <= 4294967295).toBe(true);
  });

  it.each(MODES)('accepts mode %s', (mode) => {
    expect(buildPlan(raw(['--mode', mode])).plan.mode).toBe(mode);
  });

  it('accepts a window of exactly 1 GiB per connection', () => {
    expect(buildPlan(raw(['-P', '1024', '-d', '1048576'])).plan.pipeline).toBe(1024);
    expect(buildPlan(raw(['-P', '65536', '-d', '16384'])).plan.pipeline).toBe(65536);
  });

  it('accepts a bracketed IPv6 host and drops the brackets', () => {
    expect(buildPlan(raw(['--host', '[::1]'])).plan.host).toBe('::1');
    expect(buildPlan(raw(['--host', '::1'])).plan.host).toBe('::1');
  });
});

/** [what is wrong, the arguments, text the message must contain] — checked by buildPlan. */
const planCases: Array<[string, string[], string]> = [
  ['pipeline of zero', ['--pipeline', '0'], '--pipeline'],
  ['pipeline past the limit', ['--pipeline', '65537'], '--pipeline'],
  ['set ratio over 100', ['--set-ratio', '101'], '--set-ratio'],
  ['set ratio not a number', ['--set-ratio', 'half'], '--set-ratio'],
  ['unknown mode', ['--mode', 'foo'], '--mode'],
  ['port past 65535', ['--port', '70000'], '--port'],
  ['port zero', ['--port', '0'], '--port'],
  ['port not a number', ['--port', 'http'], '--port'],
  ['negative request count', ['--requests', '-5'], '--requests'],
  ['zero requests', ['--requests', '0'], '--requests'],
  ['fractional requests', ['--requests', '1.5'], '--requests'],
  ['requests in exponent notation', ['--requests', '1e6'], '--requests'],
  ['value size not a number', ['--value-size', 'abc'], '--value-size'],
  ['absurd value size', ['--value-size', '999999999999'], '--value-size'],
  ['value size zero', ['--value-size', '0'], '--value-size'],
  ['value size range upside down', ['--value-size', '100-10'], '--value-size'],
  ['negative seed', ['--seed', '-1'], '--seed'],
  ['seed past 32 bits', ['--seed', '4294967296'], '--seed'],
  ['timeout with an unknown unit', ['--timeout', '5x'], '--timeout'],
  ['negative timeout', ['--timeout', '-1s'], '--timeout'],
  ['timeout past a day', ['--timeout', '25h'], '--timeout'],
  ['unknown engine', ['--engine', 'foo'], '--engine'],
  ['zero connections', ['-c', '0'], '--connections'],
  ['too many connections', ['--connections', '10001'], '--connections'],
  ['zero keyspace', ['--keyspace', '0'], '--keyspace'],
  ['zero threads', ['--threads', '0'], '--threads'],
  ['empty host', ['--host', ''], '--host'],
  ['empty bracketed host', ['--host', '[]'], '--host'],
  ['write template with an unknown placeholder', ['--set-cmd', 'SET __key__ __value__'], '--set-cmd'],
  ['write template without __key__', ['--set-cmd', 'SET mykey __data__'], '--set-cmd'],
  ['read template without __key__', ['--get-cmd', 'GET mykey'], '--get-cmd'],
  ['empty write command', ['--set-cmd', ''], '--set-cmd'],
  ['template starting with a placeholder', ['--get-cmd', '__key__ GET'], '--get-cmd'],
  ['--verify-get with a read that sends __data__', ['--verify-get', '--get-cmd', 'GETSET __key__ __data__'], '--get-cmd'],
  ['threads past the limit', ['--threads', '1000'], '--threads'],
  ['requests past 2^40', ['--requests', '99999999999999999999'], '--requests'],
  ['port in hex', ['--port', '0x50'], '--port'],
  ['seed with a decimal point', ['--seed', '1.0'], '--seed'],
  ['empty timeout', ['--timeout', ''], '--timeout'],
  ['--verify-get with a read that sends __rand_int__', ['--verify-get', '--get-cmd', 'HGET __key__ f__rand_int__'], '--get-cmd'],
  ['--verify-get with values too short to hold the key hash', ['--verify-get', '--value-size', '7'], '--verify-get needs values of at least 8 bytes'],
  ['--verify-get with a value range reaching below 8 bytes', ['--verify-get', '--value-size', '1-100'], '(got --value-size 1-100)'],
  ['timeout that would round to 0 ms (and so mean off)', ['--timeout', '0.4ms'], '--timeout'],
  // One duration grammar: a bare number has no unit, for every duration flag (it used to mean seconds here).
  ['a bare-number timeout', ['--timeout', '5'], '--timeout must be a duration, a number with a unit us, ms, s, m or h'],
  ['a bare-number duration', ['--duration', '2'], '--duration must be a duration'],
  ['a bare-number warmup', ['--warmup', '1'], '--warmup must be a duration'],
  ['a bare-number reconnect backoff', ['--reconnect', '--reconnect-backoff', '100'], '--reconnect-backoff must be a duration'],
  ['a timeout below its millisecond steps', ['--timeout', '500us'], '--timeout is counted in steps of 1ms'],
  ['unknown key pattern', ['--key-pattern', 'hot'], '--key-pattern'],
  ['zipf exponent of zero', ['--key-pattern', 'zipf', '--zipf-exponent', '0'], '--zipf-exponent'],
  ['negative key stddev', ['--key-pattern', 'gaussian', '--key-stddev', '-3'], '--key-stddev'],
  ['a window that cannot fit (pipeline × value size past 1 GiB)', ['-P', '65536', '-d', '67108864'], '-P/--pipeline × -d/--value-size'],
  ['a window one value past 1 GiB', ['-P', '1025', '-d', '1048576'], 'at most 1073741824'],
  ['a value-size range whose largest value does not fit the window', ['-P', '65536', '-d', '10-1048576'], '-d 1048576'],
];

describe('a bad flag value is a UsageError naming the flag, in one line', () => {
  it.each(planCases)('%s', (_what, args, flag) => {
    const err = usageError(() => buildPlan(raw(args)));
    expect(err.message).toContain(flag);
    expect(err.message).not.toContain('\n');
  });
});

/** Cases decided before or around buildPlan: commander's parsing, the suite's flags. */
const cliCases: Array<[string, string[], string]> = [
  ['unknown flag', ['--frobnicate'], '--frobnicate'],
  ['flag missing its value', ['--mode'], '--mode'],
  ['short flag missing its value', ['-P'], '--pipeline'],
  ['misspelt flag (the suggestion stays on the same line)', ['--pipline', '4'], '--pipline'],
  ['unknown suite test', ['-t', 'set,frob'], '--tests'],
  ['--csv without -t', ['--csv'], '--csv'],
  ['--compare without a port', ['-t', 'set', '--compare', 'localhost'], '--compare'],
  ['--compare with a bad port', ['-t', 'set', '--compare', '[::1]:0'], '--compare'],
  ['-t with --verify-get (the suite has its own commands)', ['-t', 'set', '--verify-get'], '--verify-get'],
  ['-t with --mode', ['-t', 'set', '--mode', 'get'], '--mode'],
  ['-t with a key prefix holding a space', ['-t', 'lpush', '--key-prefix', 'my app:'], '--key-prefix'],
  ['a plan-level error reaches the user the same way', ['--pipeline', '0'], '--pipeline'],
  ['a bare-number interval', ['--interval', '2'], '--interval must be a duration'],
  ['-n beside --duration (one would be ignored)', ['--duration', '1s'], '-n/--requests and --duration do not go together'],
  // A near miss of a subcommand is refused, never sent to a server as a Redis command.
  ['a subcommand one letter off, with its own flags', ['srve', '--port', '7330'], 'did you mean `respbench serve`?'],
  ['study mistyped', ['stdy', 'x.yaml'], 'did you mean `respbench study`?'],
  ['merge mistyped', ['mrege', 'a.json'], 'did you mean `respbench merge`?'],
  ['help mistyped', ['hlep'], 'did you mean `respbench help`?'],
  ['a subcommand in other letter case', ['Serve'], 'did you mean `respbench serve`?'],
  ['help for no such command', ['help', 'srve'], 'help: no command "srve" (did you mean serve?)'],
  ['serve with a bare-number service time', ['serve', '--service-time', '1'], '--service-time must be a duration'],
  ['a bare-number SLO bound', ['capacity', '--slo', 'p99<=1'], 'a bare number has no unit'],
];

describe('the CLI turns a usage error into exit 2 and one line on stderr', () => {
  it.each(cliCases)('%s', async (_what, args, flag) => {
    let stdout = '';
    let stderr = '';
    const io = { stdout: (t: string) => void (stdout += t), stderr: (t: string) => void (stderr += t), stderrIsTty: false };
    // Port 1 with nothing listening: a case that slipped through would exit 1, not 2.
    const code = await main(['--port', '1', '--requests', '10', '--engine', 'js', ...args], io);
    const lines = stderr.split('\n').filter((l) => l.length > 0);
    expect({ code, lines: lines.length, stdout }).toEqual({ code: 2, lines: 1, stdout: '' });
    expect(lines[0]).toMatch(/^respbench: /);
    expect(lines[0]).toContain(flag);
  });
});

/** Runs `main` in this process; what it wrote and its status. */
async function mainRun(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const io = { stdout: (t: string) => void (stdout += t), stderr: (t: string) => void (stderr += t), stderrIsTty: false };
  const code = await main(args, io);
  return { code, stdout, stderr };
}

describe('a --command with no __key__', () => {
  it('is a command with no key, as the same words after the options are (a bare name still takes a key)', () => {
    const plan = buildPlan(raw(['--command', 'INCR ctr:__rand_int__', '--command', 'GET'])).plan;
    expect(plan.commands?.map((c) => c.template)).toEqual(['INCR ctr:__rand_int__', 'GET']);
    expect(keylessMixCommands(plan)).toEqual(['INCR ctr:__rand_int__']);
    // --set-cmd and --get-cmd still need their key: a read or write of no key is not a workload.
    expect(usageError(() => buildPlan(raw(['--set-cmd', 'SET mykey __data__']))).message).toContain('has no __key__ placeholder');
  });

  it('is refused under --cluster, by name (its slot would follow from no key)', () => {
    expect(usageError(() => buildPlan(raw(['--cluster', '--command', 'INCR ctr:total']))).message).toBe(
      '--command 1: under --cluster a command needs __key__, whose slot says which primary gets it (got "INCR ctr:total")',
    );
  });
});

describe("memtier_benchmark's spellings map to ours", () => {
  it('--ratio S:G is a mix of --set-cmd and --get-cmd so weighted (a side of 0: a set or get run)', () => {
    expect(buildPlan(raw(['--ratio', '1:10'])).plan.commands).toEqual([
      { template: 'SET __key__ __data__', weight: 1, keyPattern: null },
      { template: 'GET __key__', weight: 10, keyPattern: null },
    ]);
    expect(buildPlan(raw(['--ratio', '2:3', '--set-cmd', 'RSET', '--get-cmd', 'RGET'])).plan.commands?.map((c) => c.template)).toEqual(['RSET __key__ __data__', 'RGET __key__']);
    expect(buildPlan(raw(['--ratio', '1:0'])).plan).toMatchObject({ mode: 'set' });
    expect(buildPlan(raw(['--ratio', '0:1'])).plan).toMatchObject({ mode: 'get' });
    for (const [args, text] of [
      [['--ratio', '0:0'], '--ratio must be SET:GET'],
      [['--ratio', '1-10'], '--ratio must be SET:GET'],
      [['--ratio', '1:10', '--command', 'GET'], '--ratio does not go with --command'],
      [['--ratio', '1:10', '--set-ratio', '20'], '--ratio does not go with --set-ratio'],
    ] as const) {
      expect(usageError(() => buildPlan(raw([...args]))).message).toContain(text);
    }
  });

  it('--test-time (whole seconds), --data-size, --key-maximum (keys 0..max), --key-pattern R:R/S:S/G:G', () => {
    expect(buildPlan(raw(['--test-time', '30'])).plan.durationMs).toBe(30_000);
    expect(buildPlan(raw(['--data-size', '100'])).plan).toMatchObject({ valueSizeMin: 100, valueSizeMax: 100 });
    expect(buildPlan(raw(['--key-maximum', '9999'])).plan.keyspace).toBe(10_000);
    expect(buildPlan(raw(['--key-pattern', 'R:R'])).plan.keyPattern).toBe('uniform');
    expect(buildPlan(raw(['--key-pattern', 'S:S'])).plan.keyPattern).toBe('sequential');
    expect(buildPlan(raw(['--key-pattern', 'G:G'])).plan.keyPattern).toBe('gaussian');
    expect(usageError(() => buildPlan(raw(['--key-pattern', 'R:S']))).message).toContain("of memtier's SET:GET patterns only R:R, S:S and G:G are taken");
    expect(() => raw(['--test-time', '30s'])).toThrow(/--test-time takes whole seconds/);
  });

  it('are hidden from --help, are not suggested for another flag, and -n says it is not per client', async () => {
    const help = await mainRun(['--help']);
    expect(help.stdout).not.toMatch(/--test-time|--data-size|--key-maximum|--ratio/);
    expect(help.stdout).toMatch(/not per client as memtier's --requests/);
    const ratio = await mainRun(['--port', '1', '--ratio', 'x']);
    expect(ratio.stderr).not.toContain('--rate');
  });
});

describe('the first word: help, a subcommand, or a command for the server', () => {
  it('`respbench help` is the program\'s help and `respbench help serve` the subcommand\'s, exit 0', async () => {
    const top = await mainRun(['help']);
    expect(top).toMatchObject({ code: 0, stderr: '' });
    expect(top.stdout).toMatch(/^Usage: respbench \[options\] \[command\] \[redis-command\.\.\.\]/);
    const serve = await mainRun(['-p', '1', 'help', 'serve']);
    expect(serve).toMatchObject({ code: 0, stderr: '' });
    expect(serve.stdout).toMatch(/^Usage: respbench serve/);
  });

  it('after --, or written in capitals, a word near a subcommand is a Redis command (it reaches the server: connect refused, exit 1)', async () => {
    for (const words of [['--', 'srve'], ['SAVE'], ['DEL', 'k'], ['HELLO', '3']]) {
      const run = await mainRun(['--port', '1', '--requests', '10', '--engine', 'js', ...words]);
      expect({ words, code: run.code }).toEqual({ words, code: 1 });
      expect(run.stderr).not.toContain('did you mean');
    }
  });
});

describe('parsers', () => {
  it('HOST:PORT with and without brackets', () => {
    expect(parseHostPort('127.0.0.1:6379', 'x')).toEqual({ host: '127.0.0.1', port: 6379 });
    expect(parseHostPort(' localhost:1 ', 'x')).toEqual({ host: 'localhost', port: 1 });
    expect(parseHostPort('[::1]:6379', 'x')).toEqual({ host: '::1', port: 6379 });
    expect(parseHostPort('::1:6379', 'x')).toEqual({ host: '::1', port: 6379 });
    for (const bad of ['localhost', ':6379', '[::1]', '[::1:6379', 'a:b', 'h:0', 'h:65536']) {
      expect(usageError(() => parseHostPort(bad, '--compare')).message).toMatch(/^--compare/);
    }
  });

  it('hosts lose their brackets only', () => {
    expect(parseHost(' [fe80::1] ')).toBe('fe80::1');
    expect(parseHost('example.com')).toBe('example.com');
  });

  it('durations', () => {
    expect(parseDurationMs('--t', '1.5s', false)).toBe(1500);
    expect(parseDurationMs('--t', '2000us', false)).toBe(2);
    expect(parseDurationMs('--t', '2m', false)).toBe(120_000);
    expect(parseDurationNs('--t', '500us', { allowZero: false })).toBe(500_000);
    expect(parseDurationNs('--t', '1.5ms', { allowZero: false })).toBe(1_500_000);
    expect(parseServiceTime('0.5us')).toBe(500);
    expect(parseSlo('p99<=500us').latency[0].maxUs).toBe(500);
    expect(usageError(() => parseDurationMs('--t', '2', false)).message).toContain('a bare number has no unit; write 2s or 2ms');
    expect(parseDurationMs('--t', '1h', false)).toBe(3_600_000);
    expect(parseDurationMs('--t', '0', true)).toBe(0);
    expect(usageError(() => parseDurationMs('--t', '0', false)).message).not.toContain('turns it off');
  });

  it('value sizes', () => {
    expect(parseValueSize('64')).toEqual({ min: 64, max: 64 });
    expect(parseValueSize('1-67108864')).toEqual({ min: 1, max: 67108864 });
    expect(() => parseValueSize('1-67108865')).toThrow(UsageError);
  });
});

describe('--ramp-connections', () => {
  it('start:step:every with --duration becomes the plan\'s staircase; opening times as the engines take them', () => {
    const { plan } = buildPlan(raw(['--duration', '10s', '-c', '8', '--ramp-connections', '2:3:1.5s']));
    expect(plan.rampConnections).toEqual({ start: 2, step: 3, everyMs: 1500 });
    expect([0, 1, 2, 4, 5, 7].map((id) => rampOpenAtMs(plan.rampConnections, id))).toEqual([0, 0, 1500, 1500, 3000, 3000]);
    expect(buildPlan(raw(['--duration', '1s'])).plan.rampConnections).toBeUndefined();
  });

  it('every bad value is one line naming the flag and what it takes', () => {
    for (const value of ['', '1', '1:1', '0:1:1s', '9:1:1s', '1:0:1s', '1:1:0', '1:1:fast', 'a:b:c', '1:1:1s:1']) {
      const e = usageError(() => buildPlan(raw(['--duration', '1s', '-c', '8', '--ramp-connections', value])));
      expect(e.message).toMatch(/^--ramp-connections must be start:step:every, e\.g\. 2:2:5s: start 1\.\.8 \(-c\)/);
      expect(e.message).not.toContain('\n');
    }
    expect(usageError(() => buildPlan(raw(['-c', '8', '--ramp-connections', '1:1:1s']))).message).toMatch(/^--ramp-connections needs --duration/);
    expect(usageError(() => buildPlan(raw(['--duration', '1s', '--rate', '10', '-c', '8', '--ramp-connections', '1:1:1s']))).message).toMatch(/^--ramp-connections does not go with --rate/);
  });
});
