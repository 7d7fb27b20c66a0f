/** The result's metadata (issue 14): the command line with its secrets masked. */
import { describe, expect, it } from 'vitest';
import { maskArgv, runMeta } from '../src/meta.js';

describe('maskArgv', () => {
  it('shows every password as ***: -a/--pass values, --pass=, -aVALUE, and the password inside --uri', () => {
    expect(maskArgv(['-p', '6379', '-a', 'hunter2', '--pass', 'x y', '--pass=zz', '-ahunter2'])).toEqual(['-p', '6379', '-a', '***', '--pass', '***', '--pass=***', '-a***']);
    expect(maskArgv(['--uri', 'redis://alice:pw@h:1/2', '-u', 'redis://pw@h', '--uri=rediss://bob:s3@h'])).toEqual(['--uri', 'redis://alice:***@h:1/2', '-u', 'redis://***@h', '--uri=rediss://bob:***@h']);
    expect(maskArgv(['--uri', 'redis://h:1'])).toEqual(['--uri', 'redis://h:1']);
  });

  it('the metadata: tool, version, engine, ISO UTC start, host name', () => {
    const m = runMeta('native', Date.UTC(2026, 0, 2, 3, 4, 5, 6), ['-a', 'pw']);
    expect(m).toMatchObject({ tool: 'respbench', engine: 'native', startedAt: '2026-01-02T03:04:05.006Z', commandLine: ['-a', '***'] });
    expect(m.version).toMatch(/^\d+\.\d+\.\d+/);
    expect(m.hostname.length).toBeGreaterThan(0);
  });
});
