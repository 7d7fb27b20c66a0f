#!/usr/bin/env node
import { main } from './cli.js';

// `respbench --help | head` closes the pipe early: that is not an error.
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code === 'EPIPE') process.exit(process.exitCode ?? 0);
  throw err;
});

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`respbench: ${(err as Error)?.message ?? String(err)}\n`);
    process.exitCode = 1;
  },
);
