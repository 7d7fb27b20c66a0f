/**
 * Running out of file descriptors (EMFILE: the process's `ulimit -n`;
 * ENFILE: the system's) can happen anywhere a file or a socket opens: while
 * the program loads, the native addon, package.json, a connection. Wherever
 * it does, the user reads the same line, naming the limit. bin.ts (which
 * imports nothing before it can say this) and bin-loader.cjs write the same
 * words.
 */
export function outOfFilesText(err: unknown): string | null {
  const code = (err as NodeJS.ErrnoException)?.code;
  if (code !== 'EMFILE' && code !== 'ENFILE') return null;
  return `too many open files (${code}): the open-file limit is too low for respbench; raise it (ulimit -n) or use fewer connections`;
}
