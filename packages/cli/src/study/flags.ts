/**
 * What a study command line needs before a study file is read: its options,
 * the modes a study runs by default and the run flags a file may set. Kept apart from spec.ts
 * (the file's parser, with its YAML library) so registering `study` costs a
 * plain run nothing at start-up.
 */
import { Command } from 'commander';
import type { Mode } from '../engine-js/plan.js';
import { addRunOptions } from '../run-options.js';

/** The modes a study runs when its file names none. */
export const DEFAULT_MODES: readonly Mode[] = ['set', 'get'];

/** One run flag as the study file may give it: the commander option it stands for. */
export interface RunFlag {
  /** camelCase key, commander's attribute name: `setCmd`, `valueSize`, `preload`. */
  key: string;
  /** The flag as typed on the command line: `--set-cmd`. */
  flag: string;
  /** False for switches (`--verify-get`, `--no-preload`): the file gives true/false. */
  takesValue: boolean;
  /** `--no-preload`: the file gives `preload: false`. */
  negate: boolean;
  /** The value's name in --help (`duration`, `n`, `cmd`): a `duration` takes flag-values.ts's grammar. */
  valueName?: string;
}

/** The study command's own options (the run flags ride along, by name). */
export interface StudyOptions {
  rounds?: string;
  modes?: string;
  percentiles?: string;
  out: string;
  lang: string;
  failFast: boolean;
  quiet: boolean;
  only: string[];
  [flag: string]: unknown;
}

/** The run flags a study file may set: the options addRunOptions gives a command. */
export function studyRunFlags(): RunFlag[] {
  const seen = new Set<string>();
  // A hidden alias (memtier's --test-time for --duration) shares its flag's key: the file takes the key once, named as our flag.
  return addRunOptions(new Command())
    .options.filter((o) => !seen.has(o.attributeName()) && Boolean(seen.add(o.attributeName())))
    .map((o) => ({
      key: o.attributeName(),
      flag: o.long ?? o.flags,
      takesValue: o.required || o.optional,
      negate: o.negate,
      valueName: /<([^>]+)>|\[([^\]]+)\]/.exec(o.flags)?.slice(1).find(Boolean),
    }));
}
