/**
 * `respbench completion bash|zsh|fish`: a shell completion script made from
 * the program's own commander definitions (its subcommands and the options
 * each shows in --help), so it knows every flag --help knows and no other.
 * Install: `respbench completion bash > /etc/bash_completion.d/respbench`,
 * `respbench completion zsh > "${fpath[1]}/_respbench"`,
 * `respbench completion fish > ~/.config/fish/completions/respbench.fish`.
 */
import { type Command, type Option } from 'commander';
import type { CliIo } from './io.js';
import { UsageError } from './usage-error.js';

export const SHELLS = ['bash', 'zsh', 'fish'] as const;
type Shell = (typeof SHELLS)[number];

/** The options --help shows, as typed: `-P`, `--pipeline`. */
function optionWords(options: readonly Option[]): string[] {
  return options.filter((o) => !o.hidden).flatMap((o) => [o.short, o.long].filter((f): f is string => !!f));
}

/** What to complete: the program's own words, then each subcommand's. */
function completionTable(program: Command): { top: string[]; subs: { name: string; words: string[] }[] } {
  const subs = program.commands.map((c) => ({ name: c.name(), words: [...optionWords(c.options), '--help', ...(c.name() === 'completion' ? [...SHELLS] : [])] }));
  return { top: [...subs.map((s) => s.name), 'help', ...optionWords(program.options), '--help'], subs };
}

/** Single-quoted for a shell (the words are flags and names: no quote in them, but say so if one comes). */
function quoted(words: readonly string[]): string {
  if (words.some((w) => w.includes("'"))) throw new Error('a completion word holds a quote');
  return `'${words.join(' ')}'`;
}

function bashScript(program: Command): string {
  const { top, subs } = completionTable(program);
  const cases = subs.map((s) => `    ${s.name}) words=${quoted(s.words)} ;;`).join('\n');
  return `# respbench completion for bash (respbench completion bash); made from respbench's own --help.
_respbench() {
  local cur=\${COMP_WORDS[COMP_CWORD]} sub='' i words
  for ((i = 1; i < COMP_CWORD; i++)); do
    case \${COMP_WORDS[i]} in
      ${subs.map((s) => s.name).join('|')}) sub=\${COMP_WORDS[i]}; break ;;
      --) break ;;
    esac
  done
  case $sub in
${cases}
    *) words=${quoted(top)} ;;
  esac
  COMPREPLY=($(compgen -W "$words" -- "$cur"))
}
complete -o default -F _respbench respbench
`;
}

function zshScript(program: Command): string {
  // zsh runs the bash function through bashcompinit: one table, two shells.
  return `#compdef respbench
# respbench completion for zsh (respbench completion zsh); made from respbench's own --help.
autoload -U +X bashcompinit && bashcompinit
${bashScript(program).split('\n').slice(1).join('\n')}`;
}

function fishScript(program: Command): string {
  const { subs } = completionTable(program);
  const lines = ['# respbench completion for fish (respbench completion fish); made from respbench\'s own --help.', 'complete -c respbench -f'];
  const optionLine = (condition: string, o: Option) => {
    const parts = [`complete -c respbench -n '${condition}'`];
    if (o.long) parts.push(`-l ${o.long.replace(/^--/, '')}`);
    if (o.short) parts.push(`-s ${o.short.replace(/^-/, '')}`);
    if (o.required || o.optional) parts.push('-r');
    parts.push(`-d ${JSON.stringify(o.description.split(/[;:(]/)[0].trim().slice(0, 60))}`);
    return parts.join(' ');
  };
  for (const s of program.commands) lines.push(`complete -c respbench -n '__fish_use_subcommand' -a ${s.name()} -d ${JSON.stringify(s.description().split(/[;:(]/)[0].trim().slice(0, 60))}`);
  lines.push("complete -c respbench -n '__fish_use_subcommand' -a help -d 'help of respbench or of a command'");
  for (const o of program.options.filter((x) => !x.hidden)) lines.push(optionLine('__fish_use_subcommand', o));
  for (const c of program.commands) {
    for (const o of c.options.filter((x) => !x.hidden)) lines.push(optionLine(`__fish_seen_subcommand_from ${c.name()}`, o));
  }
  const completion = subs.find((s) => s.name === 'completion');
  if (completion) lines.push(`complete -c respbench -n '__fish_seen_subcommand_from completion' -a ${quoted(SHELLS)}`);
  return `${lines.join('\n')}\n`;
}

export function completionScript(program: Command, shell: Shell): string {
  return shell === 'bash' ? bashScript(program) : shell === 'zsh' ? zshScript(program) : fishScript(program);
}

export function registerCompletionCommand(program: Command, io: CliIo): void {
  program
    .command('completion')
    .argument('<shell>', SHELLS.join(' | '))
    .description('print a shell completion script (bash, zsh or fish) for respbench\'s commands and flags')
    .action((shell: string) => {
      if (!(SHELLS as readonly string[]).includes(shell)) throw new UsageError(`completion takes one of ${SHELLS.join(', ')} (got ${JSON.stringify(shell)})`);
      io.stdout(completionScript(program, shell as Shell));
    });
}
