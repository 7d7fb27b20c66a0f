/** `respbench completion bash|zsh|fish`: made from the commander definitions, and bash completes with it. */
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { buildProgram } from '../src/cli.js';
import { completionScript } from '../src/completion.js';

const program = buildProgram();

/** What bash offers for `words` (the last one being completed) with the generated script loaded. */
function bashSuggests(words: string[]): string[] {
  const script = `${completionScript(program, 'bash')}
COMP_WORDS=(${words.map((w) => `'${w}'`).join(' ')}); COMP_CWORD=${words.length - 1}; _respbench; printf '%s\\n' "\${COMPREPLY[@]}"`;
  const r = spawnSync('bash', ['--norc', '-c', script], { encoding: 'utf8' });
  expect(r.status, r.stderr).toBe(0);
  return r.stdout.split('\n').filter(Boolean).sort();
}

const shellThere = (shell: string) => spawnSync(shell, ['-c', 'true']).status === 0;

describe('shell completion', () => {
  it('bash completes subcommands, top-level flags, and a subcommand\'s own flags after it', () => {
    expect(bashSuggests(['respbench', 'st'])).toEqual(['study']);
    expect(bashSuggests(['respbench', 'se'])).toEqual(['serve']);
    expect(bashSuggests(['respbench', '--pip'])).toEqual(['--pipeline', '--pipeline-mode']);
    expect(bashSuggests(['respbench', '-p', '6379', '--key-p'])).toEqual(['--key-pattern', '--key-prefix']);
    expect(bashSuggests(['respbench', 'serve', '--serv'])).toEqual(['--service-time']);
    expect(bashSuggests(['respbench', 'study', 'x.yaml', '--rou'])).toEqual(['--rounds']);
    expect(bashSuggests(['respbench', 'completion', ''])).toEqual(['--help', 'bash', 'fish', 'zsh']);
  });

  it('knows every flag --help shows and none it hides (memtier\'s aliases)', () => {
    const script = completionScript(program, 'bash');
    for (const o of program.options) {
      if (o.long) expect(script.includes(` ${o.long} `) || script.includes(` ${o.long}'`), o.long).toBe(!o.hidden);
    }
    expect(script).not.toContain('--test-time');
  });

  it.each(['zsh', 'fish'] as const)('%s: a script its shell parses', (shell) => {
    const script = completionScript(program, shell);
    expect(script).toContain('study');
    expect(script).toContain('pipeline');
    if (!shellThere(shell)) return;
    const r = spawnSync(shell, ['-n'], { input: script, encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
  });
});
