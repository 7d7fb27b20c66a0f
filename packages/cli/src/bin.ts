#!/usr/bin/env node
// No static imports: with a very low open-file limit (`ulimit -n`) loading
// the program's modules can fail with EMFILE, and that must be one line, not
// a module loader's stack trace (open-files.ts says it the same way).

/** stdout could not take the output (a full disk, a closed terminal): the status says so. */
let stdoutFailed = false;
const FAILED = 1;
const USAGE = 2;
const isSignalStatus = (code: number | string | undefined | null) => typeof code === 'number' && code > 128;

process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  // `respbench --help | head` closes the pipe early: that is not an error.
  if (err.code === 'EPIPE') process.exit(process.exitCode ?? 0);
  if (stdoutFailed) return;
  stdoutFailed = true;
  const why = err.code === 'ENOSPC' ? 'no space left on device (ENOSPC)' : err.code ? `${err.code}` : err.message;
  process.stderr.write(`respbench: cannot write the output to stdout: ${why}\n`);
  if (!isSignalStatus(process.exitCode)) process.exitCode = FAILED;
});
// Nowhere left to say anything: stderr's own failures are not worth a stack trace.
process.stderr.on('error', () => undefined);

// Once the command is done (and what it wrote has reached stdout and stderr:
// a pipe takes only 64 kB at a time), exit at once rather than when the
// event loop drains: node's own teardown puts the default signal actions
// back, and a signal in that moment would end the program as killed instead
// of with its status.
function exitOnceFlushed(code: number): void {
  let pending = 2;
  // setImmediate: after a failed write has had its 'error' event (emitted a few ticks later).
  const done = () => {
    if (--pending === 0) setImmediate(() => process.exit(stdoutFailed && !isSignalStatus(code) ? FAILED : code));
  };
  process.stdout.write('', done);
  process.stderr.write('', done);
}

function fail(err: unknown): void {
  const code = (err as NodeJS.ErrnoException)?.code;
  const message =
    code === 'EMFILE' || code === 'ENFILE'
      ? `too many open files (${code}): the open-file limit is too low for respbench; raise it (ulimit -n) or use fewer connections`
      : ((err as Error)?.message ?? String(err));
  process.stderr.write(`respbench: ${message}\n`);
  exitOnceFlushed(FAILED);
}

async function start(): Promise<void> {
  // No signal kills the program half-way through writing its result
  // (interrupt.ts): in place before the rest of the program loads.
  const { guardSignals } = await import('./interrupt.js');
  guardSignals();
  const [{ main }, { checkArgvText }, { UsageError }] = await Promise.all([import('./cli.js'), import('./argv-text.js'), import('./usage-error.js')]);
  const argv = process.argv.slice(2);
  try {
    checkArgvText(argv);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    process.stderr.write(`respbench: ${err.message}\n`);
    exitOnceFlushed(USAGE);
    return;
  }
  exitOnceFlushed(await main(argv));
}

start().catch(fail);
