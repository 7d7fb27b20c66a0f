/**
 * A thread run from a function's source text (a Worker with `eval`), so it
 * needs no file of its own beside the compiled one or a test's: the Pacer's
 * alarm (alarm.ts) and capacity's stall meter (capacity/machine-stalls.ts).
 * The function touches only globals and its two arguments, the worker's
 * data and its port to the main thread.
 */
import { Worker, type MessagePort } from 'node:worker_threads';

/** A started thread; `stop` ends it (and `onLost` is not called for that). */
export interface EvalThread {
  worker: Worker;
  stop(): Promise<void>;
}

/**
 * Starts `body(workerData, parentPort)` in a thread; resolves once it runs
 * (from then on it keeps no process alive: while it starts, it is what keeps
 * the process waiting for it), rejects when it cannot start. A thread that
 * fails or ends later without `stop` calls `onLost` with why, once.
 */
export function startEvalThread(body: (data: never, port: MessagePort) => void, workerData: unknown, onLost: (why: string) => void): Promise<EvalThread> {
  const source = `const { workerData, parentPort } = require('node:worker_threads');\n(${body.toString()})(workerData, parentPort);`;
  const worker = new Worker(source, { eval: true, workerData, stdout: false, stderr: false });
  let running = false;
  let stopping = false;
  let lost = false;
  const lose = (why: string): void => {
    if (stopping || lost) return;
    lost = true;
    onLost(why);
  };
  return new Promise((resolve, reject) => {
    worker.on('error', (err) => {
      if (running) lose(err.message);
      else reject(err);
    });
    worker.on('exit', (code) => {
      if (running) lose(`it ended (exit code ${code})`);
      else reject(new Error(`it ended before it ran (exit code ${code})`));
    });
    worker.once('online', () => {
      running = true;
      worker.unref();
      resolve({
        worker,
        stop: () => {
          stopping = true;
          return worker.terminate().then(() => undefined);
        },
      });
    });
  });
}
