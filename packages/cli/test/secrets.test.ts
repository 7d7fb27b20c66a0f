import { describe, expect, it } from 'vitest';
import { checkWorkloads } from '../src/compare/compare.js';
import type { Comparable } from '../src/compare/figures.js';
import { isSecretKey, redactCommandLine, redactSecrets, redactText, redactUri } from '../src/secrets.js';
import { describeTarget, type TargetSpec } from '../src/study/target-spec.js';

describe('redactUri hides the whole password of any URI, well formed or not', () => {
  it('a field or flag named like a secret, in any spelling, is one; a file that holds one is not', () => {
    for (const k of ['password', 'pass', 'authToken', 'auth_token', 'masterauth', 'requirepass', 'tlsKeyPassphrase', 'apiSecret', 'AUTH']) expect(isSecretKey(k), k).toBe(true);
    for (const k of ['auth-file', 'passwordPath', 'user', 'keyPrefix', 'host', 'tokenDir', 'credentials']) expect(isSecretKey(k), k).toBe(false);
    expect(redactSecrets({ plan: { authToken: 'x', user: 'bench' } })).toEqual({ plan: { authToken: '***', user: 'bench' } });
  });

  it.each([
    ['redis://u:a@top/secret%@host:1', 'redis://u:***@host:1'],
    ['redis://u:p@ss@h:1/2', 'redis://u:***@h:1/2'],
    ['redis://secret@h', 'redis://***@h'],
    ['redis:/u:secret@h', '***@h'],
    ['http://u:secret@h:1', 'http://u:***@h:1'],
    ['unix://u:secret@sock?db=x', 'unix://u:***@sock?db=x'],
    ['redis://h:1', 'redis://h:1'],
  ])('%s → %s', (given, shown) => {
    expect(redactUri(given)).toBe(shown);
  });
});

describe('redactSecrets', () => {
  it('hides secret fields at any depth and URIs with a login, and leaves data with an @ alone', () => {
    const shown = redactSecrets({ password: 'pw1', auth: 'pw2', tls: { keyPassphrase: 'pw3' }, uri: 'redis://u:pw4@h', keyPrefix: 'a@b', user: 'bench', none: null, pass: null });
    expect(shown).toEqual({ password: '***', auth: '***', tls: { keyPassphrase: '***' }, uri: 'redis://u:***@h', keyPrefix: 'a@b', user: 'bench', none: null, pass: null });
  });
  it('redactText hides a password as given and %-encoded', () => {
    expect(redactText('said p@ss and p%40ss', 'p@ss')).toBe('said *** and ***');
  });
});

describe('secrets in what is shown of inputs', () => {
  it('a URI whose @host was forgotten: what follows user: is no port, so it is hidden; a port is not', () => {
    expect(redactUri('redis://default:Sup3rS3cretPw')).toBe('redis://default:***');
    expect(redactUri('redis://default:S3cret/0?x=1')).toBe('redis://default:***/0?x=1');
    expect(redactUri('redis://h:6379/0')).toBe('redis://h:6379/0');
  });

  it('a command line: the value of a secret flag or directive, and the passwords named, whatever their form', () => {
    expect(redactCommandLine("redis-server --port 1 --requirepass StudyPw1 --save ''")).toBe("redis-server --port 1 --requirepass *** --save ''");
    expect(redactCommandLine('redis-server --masterauth=Pw2 --bind 127.0.0.1')).toBe('redis-server --masterauth=*** --bind 127.0.0.1');
    expect(redactCommandLine('my-kv -a Pw3 --port 8888')).toBe('my-kv -a *** --port 8888');
    expect(redactCommandLine('sh -c "exec kv --auth-file x --key Pw4word"', 'Pw4word')).toBe('sh -c "exec kv --auth-file x --key ***"');
    expect(redactCommandLine('redis-server --port 7 --appendonly yes')).toBe('redis-server --port 7 --appendonly yes');
  });

  it("a study's command target is described without its password (the detail and series CSVs and the HTML show this)", () => {
    const target = { kind: 'command', command: 'redis-server --port {port} --requirepass StudyPwCmd1', credentials: { user: null, password: 'StudyPwCmd1', dbnum: null } } as unknown as TargetSpec;
    expect(describeTarget(target)).toBe('command: redis-server --port {port} --requirepass ***');
  });

  it('compare: a hand-edited plan with passwords in secret fields, nested, or in a URI warns of the difference without printing them', () => {
    const side = (file: string, plan: Record<string, unknown>): Comparable => ({ file, kind: 'run', rows: [], plan, engine: 'native', hostname: 'h', summary: 'run' });
    const warnings = checkWorkloads(
      side('a.json', { host: '127.0.0.1' }),
      side('b.json', { host: 'redis://:HandEditPwE@h', passwd: 'HandEditPw8', requirepass: 'HandEditPw9', tls: { keyPassword: 'HandEditPwA', pass: 'HandEditPwB' } }),
    );
    expect(warnings.length).toBeGreaterThanOrEqual(4);
    expect(warnings.join('\n')).not.toMatch(/HandEditPw/);
  });
});
