/**
 * The first word after the top-level options decides what respbench does: a
 * subcommand (serve, study, …), `help`, or a Redis command to benchmark (as
 * redis-benchmark takes one). A near miss of a subcommand must not become
 * load on a server: `respbench srve` sent SRVE 100,000 times. This reads the
 * words before commander does and refuses such a word, with the subcommand
 * it most likely meant.
 */
import type { Command } from 'commander';
import { closest } from './edit-distance.js';
import { shownQuoted } from './printable.js';
import { UsageError } from './usage-error.js';

/** Edits within which a first word counts as a mistyped subcommand. */
const TYPO_DISTANCE = 2;

/** The flags of `program` that take the next word as their value (a required value, or an optional one the next word can fill). */
export function flagsTakingValue(program: Command): { required: Set<string>; optional: Set<string> } {
  const names = (o: Command['options'][number]) => [o.short, o.long].filter((f): f is string => !!f);
  return {
    required: new Set(program.options.filter((o) => o.required).flatMap(names)),
    optional: new Set(program.options.filter((o) => o.optional).flatMap(names)),
  };
}

/**
 * The first operand among the top-level words and its index; null when
 * there is none or `--` comes first (the user said: what follows is a
 * command for the server).
 */
export function firstOperand(program: Command, argv: readonly string[]): { index: number; word: string } | null {
  const { required, optional } = flagsTakingValue(program);
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--') return null;
    if (!a.startsWith('-') || a === '-') return { index: i, word: a };
    if (a.includes('=')) continue;
    if (required.has(a)) i++;
    else if (optional.has(a) && i + 1 < argv.length && !argv[i + 1].startsWith('-')) i++;
  }
  return null;
}

/** The words that name something respbench does itself: its subcommands and `help`. */
export function ownWords(program: Command): string[] {
  return [...program.commands.flatMap((c) => [c.name(), ...c.aliases()]), 'help'];
}

/**
 * A UsageError when `word` is a near miss of one of respbench's own words
 * (within TYPO_DISTANCE edits, or the same word in other letter case); null
 * for an exact subcommand and for a word far from all of them. A word in
 * capitals is a Redis command as redis-benchmark's users write them (SAVE,
 * DEL, HELLO are near serve and help, and mean the Redis command).
 */
export function subcommandTypo(word: string, own: readonly string[]): UsageError | null {
  if (own.includes(word)) return null;
  const capitals = /[A-Z]/.test(word) && word === word.toUpperCase();
  const sameLetters = own.find((w) => w === word.toLowerCase());
  const near = sameLetters ?? (capitals ? null : closest(word, own, TYPO_DISTANCE));
  if (near === null) return null;
  return new UsageError(
    `${shownQuoted(word)} is not a respbench command: did you mean \`respbench ${near}\`? (to benchmark ${shownQuoted(word)} as a Redis command, put -- before it: respbench [options] -- ${word} …)`,
  );
}

/** `respbench help [command]`: the help of the program or of one subcommand. */
export function showHelp(program: Command, words: readonly string[]): void {
  const name = words[0];
  if (name === undefined || name === 'help') {
    program.outputHelp();
    return;
  }
  const sub = program.commands.find((c) => c.name() === name || c.aliases().includes(name));
  if (!sub) {
    const near = closest(name, ownWords(program).filter((w) => w !== 'help'), TYPO_DISTANCE);
    throw new UsageError(`help: no command ${shownQuoted(name)}${near ? ` (did you mean ${near}?)` : ''}; the commands are ${program.commands.map((c) => c.name()).join(', ')}`);
  }
  sub.outputHelp();
}
