/** `respbench study <file>`: placeholder until the study runner lands. */
import type { Command } from 'commander';

export function registerStudyCommand(program: Command, _io: { stdout: (t: string) => void; stderr: (t: string) => void }): void {
  program
    .command('study <file>')
    .description('run a study: scenarios x modes x rounds (not yet available)')
    .action(() => {
      throw new Error('study is not available yet');
    });
}
