import { describe, expect, it } from 'vitest';
import { redactSecrets, redactText, redactUri } from '../src/secrets.js';

describe('redactUri hides the whole password of any URI, well formed or not', () => {
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
