/** The result's metadata (issue 14): the command line with its secrets masked. */
import { describe, expect, it } from 'vitest';
import type { Command } from 'commander';
import { buildProgram } from '../src/cli.js';
import { maskArgv, runMeta, SHORT_FLAGS_WITH_VALUE } from '../src/meta.js';

describe('maskArgv', () => {
  it('shows every password as ***: -a/--pass values, --pass=, -aVALUE, and the password inside --uri', () => {
    expect(maskArgv(['-p', '6379', '-a', 'hunter2', '--pass', 'x y', '--pass=zz', '-ahunter2'])).toEqual(['-p', '6379', '-a', '***', '--pass', '***', '--pass=***', '-a***']);
    expect(maskArgv(['--uri', 'redis://alice:pw@h:1/2', '-u', 'redis://pw@h', '--uri=rediss://bob:s3@h'])).toEqual(['--uri', 'redis://alice:***@h:1/2', '-u', 'redis://***@h', '--uri=rediss://bob:***@h']);
    expect(maskArgv(['--uri', 'redis://h:1'])).toEqual(['--uri', 'redis://h:1']);
  });

  it('reads bundled one-letter flags as commander does: -3qa PW, -qaPW, -3qu URI, and a value letter first (-p6379) hides nothing', () => {
    expect(maskArgv(['-3qa', 'S3cr3tPW', '-n', '100'])).toEqual(['-3qa', '***', '-n', '100']);
    expect(maskArgv(['-qaS3cr3tPW', '-lqa', 'x'])).toEqual(['-qa***', '-lqa', '***']);
    expect(maskArgv(['-3qu', 'redis://u:pw@h:1', '-quredis://:pw@h'])).toEqual(['-3qu', 'redis://u:***@h:1', '-quredis://:***@h']);
    // -p takes "a" as its value: no -a there; -t takes the next word, whatever it looks like.
    expect(maskArgv(['-pa', '-t', '-a', '-ca'])).toEqual(['-pa', '-t', '-a', '-ca']);
  });

  it('knows which one-letter flags of the program take a value, in every command', () => {
    const withValue = new Set<string>();
    const switches = new Set<string>();
    const visit = (cmd: Command): void => {
      for (const o of cmd.options) {
        if (!o.short) continue;
        (o.required || o.optional ? withValue : switches).add(o.short.slice(1));
      }
      cmd.commands.forEach(visit);
    };
    visit(buildProgram());
    expect([...withValue].sort()).toEqual([...SHORT_FLAGS_WITH_VALUE].sort());
    expect([...switches].filter((l) => withValue.has(l))).toEqual([]);
  });

  it('the metadata: tool, version, engine, ISO UTC start, host name', () => {
    const m = runMeta('native', Date.UTC(2026, 0, 2, 3, 4, 5, 6), ['-a', 'pw']);
    expect(m).toMatchObject({ tool: 'respbench', engine: 'native', startedAt: '2026-01-02T03:04:05.006Z', commandLine: ['-a', '***'] });
    expect(m.version).toMatch(/^\d+\.\d+\.\d+/);
    expect(m.hostname.length).toBeGreaterThan(0);
  });
});
