#!/usr/bin/env node
import { EXIT } from './exit.js';
import { guardSignals } from './interrupt.js';

// No signal kills the program half-way through writing its result
// (interrupt.ts): in place before the rest of the program loads.
guardSignals();
const { main } = await import('./cli.js');

/** stdout could not take the output (a full disk, a closed terminal): the status says so. */
let stdoutFailed = false;
const isSignalStatus = (code: number | string | undefined) => typeof code === 'number' && code > 128;

process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  // `respbench --help | head` closes the pipe early: that is not an error.
  if (err.code === 'EPIPE') process.exit(process.exitCode ?? 0);
  if (stdoutFailed) return;
  stdoutFailed = true;
  const why = err.code === 'ENOSPC' ? 'no space left on device (ENOSPC)' : err.code ? `${err.code}` : err.message;
  process.stderr.write(`respbench: cannot write the output to stdout: ${why}\n`);
  if (!isSignalStatus(process.exitCode)) process.exitCode = EXIT.failed;
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
    if (--pending === 0) setImmediate(() => process.exit(stdoutFailed && !isSignalStatus(code) ? EXIT.failed : code));
  };
  process.stdout.write('', done);
  process.stderr.write('', done);
}

main(process.argv.slice(2)).then(exitOnceFlushed, (err: unknown) => {
  process.stderr.write(`respbench: ${(err as Error)?.message ?? String(err)}\n`);
  exitOnceFlushed(EXIT.failed);
});
