import { availableParallelism } from 'node:os';
import { configDefaults, defineConfig } from 'vitest/config';
import { setExtraCaAside } from './helpers/extra-ca.js';

/**
 * Files that measure time against the machine (rates held, client lag, a
 * capacity search, two runs compared for noise, a failover's timing, a
 * ramp's staircase, a held reply against a batch, a slot move that must
 * leave most of a paced run after it, a paced JS run that must keep its
 * schedule to keep V8's compilers off): they run after the rest,
 * one at a time, with the machine to themselves. Every other file runs side
 * by side with another, each in its own sandbox (helpers/file-sandbox.ts):
 * most of their time is a run's wall clock, not CPU.
 */
const ALONE = ['timing', 'capacity', 'study-capacity', 'compare', 'ramp', 'pipeline-mode', 'cluster-node-death', 'cluster-topology-refresh', 'js-rate-compilers'].map((name) => `${name}.test.ts`);

/**
 * Files side by side: RESPBENCH_E2E_WORKERS, else one more than the cores, at
 * most 4 (the suite is tuned on 2). A file waits on its runs' wall clock
 * (servers starting, --duration, a failover) as well as computing: on 2
 * cores the side-by-side part took 431 s with 2 files at a time and 378 s
 * with 3 (both cores then 98% busy), every test passing in both.
 */
function sideBySideWorkers(): number {
  const asked = Number(process.env.RESPBENCH_E2E_WORKERS);
  if (Number.isInteger(asked) && asked >= 1) return asked;
  return Math.min(4, Math.max(1, availableParallelism() + 1));
}

// Before any worker, global setup or CLI start inherits it: helpers/extra-ca.ts.
setExtraCaAside();

export default defineConfig({
  test: {
    root: new URL('.', import.meta.url).pathname,
    // The engine probes (does native load, does io_uring run) once per run, not once per file.
    globalSetup: [new URL('./helpers/engine-probes.ts', import.meta.url).pathname],
    setupFiles: [new URL('./helpers/file-sandbox.ts', import.meta.url).pathname],
    pool: 'forks',
    testTimeout: 120_000,
    hookTimeout: 60_000,
    projects: [
      {
        extends: true,
        test: {
          name: 'side-by-side',
          include: ['**/*.test.ts'],
          exclude: [...configDefaults.exclude, ...ALONE],
          maxWorkers: sideBySideWorkers(),
          sequence: { groupOrder: 1 },
        },
      },
      {
        extends: true,
        test: {
          name: 'alone',
          include: ALONE,
          fileParallelism: false,
          // After side-by-side (vitest runs the groups from the lowest).
          sequence: { groupOrder: 2 },
        },
      },
    ],
  },
});
