/**
 * Writing result files whole, and fs errors in words a user reads: shared by
 * the study's outputs, --html and the capacity report. Kept apart from the
 * study's outputs so a run loads neither the study nor the report package.
 */
import { accessSync, appendFileSync, closeSync, constants as fsConstants, fstatSync, ftruncateSync, openSync, readFileSync, renameSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { printable } from './printable.js';
import { redactKnown } from './secrets.js';
import { UsageError } from './usage-error.js';

/** An fs error in words a user reads: `no space left on device (ENOSPC)`. */
export function fsErrorText(err: unknown): string {
  const e = err as NodeJS.ErrnoException;
  switch (e?.code) {
    case 'ENOSPC':
      return 'no space left on device (ENOSPC)';
    case 'EDQUOT':
      return 'disk quota exceeded (EDQUOT)';
    case 'EROFS':
      return 'read-only file system (EROFS): not writable';
    case 'EACCES':
    case 'EPERM':
      return `permission denied (${e.code}): not writable`;
    case 'ENOTDIR':
      return 'a part of the path is a file, not a directory (ENOTDIR)';
    case 'EIO':
      return 'input/output error (EIO)';
    default:
      return e?.code ? `${e.code}: ${String(e.message).replace(/^[A-Z]+: /, '').replace(/, \w+ '.*'$/, '')}` : String((e as Error)?.message ?? e);
  }
}

/**
 * Writes `text` to a temp file beside `file` and renames it over `file`; the
 * temp never outlives a failure. Every password this process was given is
 * replaced by *** first (secrets.ts redactKnown, the same last net as
 * stdout and stderr have), whatever quoted it: a server's words in a
 * failure reason, a command line, a hand-edited input. Nothing is written
 * through a symlink: the rename replaces a link named `file` (its target is
 * left alone), and the temp is created new (O_EXCL), so a link planted at
 * its name is removed, not followed.
 */
export function writeWhole(file: string, text: string): void {
  const tmp = `${file}.${process.pid}.tmp`;
  text = redactKnown(text);
  try {
    try {
      writeFileSync(tmp, text, { flag: 'wx' });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      unlinkSync(tmp);
      writeFileSync(tmp, text, { flag: 'wx' });
    }
    renameSync(tmp, file);
  } catch (err) {
    try {
      unlinkSync(tmp);
    } catch {
      /* never created */
    }
    throw err;
  }
}

/** Appends `text` (passwords hidden, as writeWhole does) to `file`, or leaves it as it was (cut back to its old length) if the append fails. */
export function appendWhole(file: string, text: string): void {
  const fd = openSync(file, 'a');
  try {
    const before = fstatSync(fd).size;
    try {
      appendFileSync(fd, redactKnown(text));
    } catch (err) {
      try {
        ftruncateSync(fd, before);
      } catch {
        /* nothing more to do: the next whole rewrite repairs it */
      }
      throw err;
    }
  } finally {
    closeSync(fd);
  }
}

/**
 * A file another program wrote (a study target's kept log: redis-server
 * quotes a bad `requirepass` line whole) with every password this process
 * was given replaced by ***, rewritten whole; as it was when it holds none.
 * Returns false when it could not be looked through (unreadable, or too
 * large for one string), for the caller to say.
 */
export function redactKnownInFile(file: string): boolean {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return false;
  }
  // writeWhole hides them; a file that holds none is left as it was.
  if (redactKnown(text) !== text) writeWhole(file, text);
  return true;
}

/** Before the run: an output file (`flag file`) that cannot be written is said now (exit 2), not after the run. */
export function checkWritableFile(flag: string, file: string): void {
  const dir = path.dirname(path.resolve(file));
  try {
    if (!statSync(dir).isDirectory()) throw Object.assign(new Error('not a directory'), { code: 'ENOTDIR' });
    accessSync(dir, fsConstants.W_OK);
  } catch (err) {
    throw new UsageError(`${flag} ${printable(file)}: cannot write there: ${fsErrorText(err)}`);
  }
  try {
    if (statSync(file).isDirectory()) throw new UsageError(`${flag} ${printable(file)} is a directory: give a file name`);
  } catch (err) {
    if (err instanceof UsageError) throw err;
    /* does not exist yet: fine */
  }
}
