/**
 * The thread `respbench merge` runs its work on (see mergeAwayFromSignals in
 * merge.ts): what it prints goes to the command as messages, and how it
 * ended (an exit status, a usage error, a failure) as the last one.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { Exit } from './exit.js';
import { mergeFiles, type MergeFlags, type MergeMessage } from './merge.js';
import { UsageError } from './usage-error.js';

const { files, opts, argv } = workerData as { files: string[]; opts: MergeFlags; argv: string[] };
const post = (m: MergeMessage) => parentPort!.postMessage(m);
const io = { stdout: (t: string) => post({ stdout: t }), stderr: (t: string) => post({ stderr: t }), stderrIsTty: false };

// No top-level await: the bundle is CommonJS (scripts/bundle.mjs).
mergeFiles(files, opts, io, argv).then(
  () => post({ done: 0 }),
  (err: unknown) => {
    if (err instanceof Exit) post({ done: err.code });
    else if (err instanceof UsageError) post({ usage: err.message });
    else post({ failed: (err as Error).message });
  },
);
