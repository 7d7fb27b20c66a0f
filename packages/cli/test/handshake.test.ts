/**
 * The handshake's bytes and messages (engine-js/handshake.ts), the flags and
 * URIs that fill a Plan's credentials, and that a password never shows in a
 * RunResult. The bytes are the same literals as crates/respbench-core's
 * handshake tests: both engines send them.
 */
import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { fatalReplyText, handshakeBytes, handshakeFailureText, handshakeSteps } from '../src/engine-js/handshake.js';
import { formatHuman, formatJson } from '../src/output.js';
import { addRunOptions } from '../src/run-options.js';
import { finishResult } from '../src/run.js';
import { ReplyScanner } from '../src/engine-js/reply.js';
import { buildPlan, type RawRunOptions } from '../src/validate.js';
import { parseUri, redactUri } from '../src/uri.js';
import { UsageError } from '../src/usage-error.js';
import { rawResult } from './fixtures.js';

function raw(args: string[] = []): RawRunOptions {
  const cmd = addRunOptions(new Command()).exitOverride();
  cmd.parse(['--seed', '1', ...args], { from: 'user' });
  return cmd.opts() as RawRunOptions;
}

function usageError(run: () => unknown): string {
  try {
    run();
  } catch (err) {
    if (err instanceof UsageError) return err.message;
    throw err;
  }
  throw new Error('expected a UsageError');
}

const none = { user: null, password: null, dbnum: null, resp3: false };

describe('handshake bytes', () => {
  it('sends nothing when the plan asks for nothing', () => {
    expect(handshakeSteps(none)).toEqual([]);
  });

  it('matches the native engine byte for byte', () => {
    expect(handshakeBytes(handshakeSteps({ ...none, password: 's3cret' })).toString()).toBe(
      '*2\r\n$4\r\nAUTH\r\n$6\r\ns3cret\r\n*3\r\n$6\r\nCLIENT\r\n$7\r\nSETNAME\r\n$9\r\nrespbench\r\n',
    );
    expect(handshakeBytes(handshakeSteps({ user: 'bench', password: 's3cret', dbnum: 3, resp3: true })).toString()).toBe(
      '*5\r\n$5\r\nHELLO\r\n$1\r\n3\r\n$4\r\nAUTH\r\n$5\r\nbench\r\n$6\r\ns3cret\r\n*2\r\n$6\r\nSELECT\r\n$1\r\n3\r\n*3\r\n$6\r\nCLIENT\r\n$7\r\nSETNAME\r\n$9\r\nrespbench\r\n',
    );
  });

  it('puts CLIENT TRACKING on (--client-tracking) after SELECT and before the name, as the native engine', () => {
    expect(handshakeBytes(handshakeSteps({ ...none, resp3: true, clientTracking: true })).toString()).toBe(
      '*2\r\n$5\r\nHELLO\r\n$1\r\n3\r\n*3\r\n$6\r\nCLIENT\r\n$8\r\nTRACKING\r\n$2\r\non\r\n*3\r\n$6\r\nCLIENT\r\n$7\r\nSETNAME\r\n$9\r\nrespbench\r\n',
    );
  });

  it('sends READONLY (a --read-from replica socket) before the name, alone when nothing else is asked, as the native engine', () => {
    expect(handshakeBytes(handshakeSteps({ ...none, readOnly: true })).toString()).toBe('*1\r\n$8\r\nREADONLY\r\n*3\r\n$6\r\nCLIENT\r\n$7\r\nSETNAME\r\n$9\r\nrespbench\r\n');
  });

  it('words failures as the native engine does, without the password', () => {
    const plan = { user: 'bench', password: 's3cret', dbnum: 3, resp3: false };
    const [auth, select] = handshakeSteps(plan);
    expect(handshakeFailureText(plan, auth, 'WRONGPASS invalid username-password pair or user is disabled.')).toBe(
      "authentication failed for user 'bench': WRONGPASS invalid username-password pair or user is disabled.",
    );
    expect(handshakeFailureText(plan, select, "NOPERM this user has no permissions to run the 'select' command")).toBe(
      "user 'bench' may not run SELECT (NOPERM this user has no permissions to run the 'select' command)",
    );
    expect(handshakeFailureText(plan, select, 'ERR DB index is out of range')).toBe('cannot select database 3: ERR DB index is out of range');
    expect(handshakeFailureText(plan, auth, 'ERR echo s3cret')).not.toContain('s3cret');
    expect(fatalReplyText('ERR x', null)).toBeNull();
    expect(fatalReplyText('NOAUTH Authentication required.', null)).toMatch(/requires a password/);
  });
});

describe('a refused HELLO 3 (issue 20 item 11)', () => {
  const hello = (password: string | null) => handshakeSteps({ ...none, resp3: true, password })[0];
  it.each([
    ['ERR HELLO is disabled here', null, 'HELLO 3 failed: ERR HELLO is disabled here'],
    ["ERR unknown command 'HELLO'", null, "HELLO 3 failed: ERR unknown command 'HELLO' (the server does not speak RESP3: leave out -3/--resp3)"],
    ['NOPROTO sorry, this protocol version is not supported', 'pw', 'HELLO 3 failed: NOPROTO sorry, this protocol version is not supported (the server does not speak RESP3: leave out -3/--resp3)'],
    ['ERR protocol 3 refused', 'pw', 'HELLO 3 failed: ERR protocol 3 refused'],
    ['WRONGPASS invalid username-password pair or user is disabled.', 'pw', "authentication failed for user 'default': WRONGPASS invalid username-password pair or user is disabled."],
  ])('%s (password %s) says: %s', (reply, password, said) => {
    expect(handshakeFailureText({ user: null, password, dbnum: null }, hello(password), reply)).toBe(said);
  });
});

describe('credentials from flags, URI and REDISCLI_AUTH', () => {
  it('reads -a, --user, --dbnum, -3', () => {
    const { plan } = buildPlan(raw(['-a', 'pw', '--user', 'bench', '--dbnum', '3', '-3']));
    expect(plan).toMatchObject({ password: 'pw', user: 'bench', dbnum: 3, resp3: true });
  });

  it('takes the password from REDISCLI_AUTH when no flag gives one', () => {
    expect(buildPlan(raw(), { REDISCLI_AUTH: 'envpw' }).plan.password).toBe('envpw');
    expect(buildPlan(raw(['-a', 'flag']), { REDISCLI_AUTH: 'envpw' }).plan.password).toBe('flag');
    expect(buildPlan(raw()).plan).toMatchObject(none);
  });

  it('reads a redis:// URI; flags win over its parts', () => {
    const { plan } = buildPlan(raw(['-u', 'redis://bench:p%40ss@db.example:7000/2']));
    expect(plan).toMatchObject({ host: 'db.example', port: 7000, user: 'bench', password: 'p@ss', dbnum: 2, tls: null, socket: null });
    expect(buildPlan(raw(['-u', 'redis://bench:x@h/2', '--dbnum', '5', '-a', 'y'])).plan).toMatchObject({ dbnum: 5, password: 'y' });
    expect(parseUri('redis://secret@[::1]')).toMatchObject({ host: '::1', port: 6379, user: null, password: 'secret', dbnum: null });
    expect(parseUri('rediss://h:6380').tls).toBe(true);
    expect(parseUri('unix:///tmp/redis.sock?db=4')).toMatchObject({ socket: '/tmp/redis.sock', dbnum: 4, host: null });
  });

  it('reads redis+cluster:// and rediss+cluster:// as a cluster seed (as --cluster)', () => {
    const { plan } = buildPlan(raw(['-u', 'redis+cluster://bench:pw@10.0.0.5:7000']));
    expect(plan).toMatchObject({ host: '10.0.0.5', port: 7000, user: 'bench', password: 'pw', tls: null });
    expect(plan.cluster).toMatchObject({ seeds: [] });
    expect(parseUri('REDISS+CLUSTER://h:7001')).toMatchObject({ tls: true, cluster: true, port: 7001 });
    expect(parseUri('redis://h').cluster).toBe(false);
    expect(buildPlan(raw(['-u', 'redis://h:7000'])).plan.cluster ?? null).toBeNull();
    expect(redactUri('redis+cluster://bench:s3cret@h:1')).toBe('redis+cluster://bench:***@h:1');
    expect(() => parseUri('unix+cluster:///tmp/s')).toThrow(/unknown scheme/);
    // A cluster has database 0 only.
    expect(() => buildPlan(raw(['-u', 'redis+cluster://h:7000/3']))).toThrow(/database 0 only/);
  });

  it('shows a URI with its password as ***', () => {
    expect(redactUri('redis://bench:s3cret@h:1/2')).toBe('redis://bench:***@h:1/2');
    expect(redactUri('redis://s3cret@h')).toBe('redis://***@h');
    expect(redactUri('redis://h:1')).toBe('redis://h:1');
  });

  it.each([
    [['--user', 'bench'], '--user needs a password'],
    [['-a', ''], '-a/--pass must not be empty'],
    [['--dbnum', '-1'], '--dbnum'],
    [['--dbnum', 'x'], '--dbnum'],
    [['-u', 'http://h'], '-u/--uri must be'],
    [['-u', 'redis://bench:s3cret@h/x'], 'redis://bench:***@h/x'],
    [['-u', 'unix://relative?db=1'], 'absolute path'],
  ])('refuses %j in one line', (args, text) => {
    const message = usageError(() => buildPlan(raw(args)));
    expect(message).toContain(text);
    expect(message).not.toContain('s3cret');
    expect(message).not.toContain('\n');
  });
});

describe('secrets in what a run prints', () => {
  it('--json shows the password as *** and human output not at all', () => {
    const { plan } = buildPlan(raw(['-a', 's3cret', '--user', 'bench', '--dbnum', '3']));
    const result = finishResult(plan, rawResult());
    const json = formatJson(result);
    expect(json).not.toContain('s3cret');
    expect(JSON.parse(json).plan.password).toBe('***');
    const human = formatHuman(result);
    expect(human).not.toContain('s3cret');
    expect(human).toContain('auth bench');
    expect(human).toContain('db 3');
    // The engine still got the real one.
    expect(plan.password).toBe('s3cret');
  });

  it('a NOAUTH/NOPERM failure prints no figures', () => {
    const { plan } = buildPlan(raw());
    const human = formatHuman(finishResult(plan, rawResult({ failure: { kind: 'auth', message: 'connection 0: the server requires a password' } })));
    expect(human).not.toMatch(/ops\/s/);
    expect(human).toMatch(/FAILED \(auth\)/);
  });
});

describe('RESP3 replies (--resp3) count as one reply each', () => {
  // The same stream as crates/respbench-core/src/handshake.rs's test.
  const replies = [
    '%2\r\n+server\r\n+redis\r\n+proto\r\n:3\r\n', // map (HELLO 3's shape)
    '~2\r\n+a\r\n+b\r\n', // set
    ',3.14\r\n', // double
    '#t\r\n', // boolean
    '=15\r\ntxt:Some string\r\n', // verbatim string
    '(3492890328409238509324850943850943825024385\r\n', // big number
    '|1\r\n+key-popularity\r\n%1\r\n$1\r\na\r\n,0.1923\r\n$5\r\nvalue\r\n', // attribute, then the reply it annotates
    '_\r\n', // null
    '!21\r\nSYNTAX invalid syntax\r\n', // blob error
  ];
  it('scans each as one reply, an attribute with the reply it annotates', () => {
    const buf = Buffer.from(replies.join(''));
    const scanner = new ReplyScanner();
    const ends: number[] = [];
    for (let at = 0; at < buf.length; ) {
      at = scanner.scan(buf, at, buf.length);
      expect(at).toBeGreaterThan(0);
      ends.push(at);
    }
    let sum = 0;
    expect(ends).toEqual(replies.map((r) => (sum += r.length)));
    // The annotated reply is the top one: a bulk "value".
    const attr = Buffer.from(replies[6]);
    scanner.scan(attr, 0, attr.length);
    expect(attr.toString('latin1', scanner.payloadStart, scanner.payloadStart + scanner.payloadLen)).toBe('value');
  });
});
