#!/usr/bin/env node
// No static imports: with a very low open-file limit (`ulimit -n 20`) loading
// the program's modules fails with EMFILE, and that must be one line, not a
// module loader's stack trace.

// `respbench --help | head` closes the pipe early: that is not an error.
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code === 'EPIPE') process.exit(process.exitCode ?? 0);
  throw err;
});

function fail(err: unknown): void {
  const code = (err as NodeJS.ErrnoException)?.code;
  const message =
    code === 'EMFILE' || code === 'ENFILE'
      ? `too many open files (${code}): the open-file limit is too low for respbench; raise it (ulimit -n) or use fewer connections`
      : ((err as Error)?.message ?? String(err));
  process.stderr.write(`respbench: ${message}\n`);
  process.exitCode = 1;
}

Promise.all([import('./cli.js'), import('./argv-text.js'), import('./validate.js')]).then(
  async ([{ main }, { checkArgvText }, { UsageError }]) => {
    const argv = process.argv.slice(2);
    try {
      checkArgvText(argv);
    } catch (err) {
      if (!(err instanceof UsageError)) throw err;
      process.stderr.write(`respbench: ${err.message}\n`);
      process.exitCode = 2;
      return;
    }
    process.exitCode = await main(argv);
  },
).catch(fail);
