/**
 * What a study command line needs before a study file is read: the modes a
 * study runs by default and the shape of a run flag. Kept apart from spec.ts
 * (the file's parser, with its YAML library) so registering `study` costs a
 * plain run nothing at start-up.
 */
import type { Mode } from '../engine-js/plan.js';

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
}
