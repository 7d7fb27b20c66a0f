/** Where a study file's value sits and the one-line error naming the file and line of a bad one. */
import { UsageError } from '../usage-error.js';

/** A value's place in the file: keys and list indexes from the top. */
export type Path = (string | number)[];

export class FileErrors {
  constructor(
    readonly file: string,
    private readonly locate: (at: Path) => number | undefined,
  ) {}

  /** A UsageError naming the file, the line (when known) and what is wrong. */
  at(at: Path, message: string): UsageError {
    const line = this.locate(at);
    return new UsageError(`${this.file}${line ? `:${line}` : ''}: ${message}`);
  }
}

export function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

