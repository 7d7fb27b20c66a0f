import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    root: new URL('.', import.meta.url).pathname,
    include: ['**/*.test.ts'],
    // The engine probes (does native load, does io_uring run) once per run, not once per file.
    globalSetup: [new URL('./helpers/engine-probes.ts', import.meta.url).pathname],
    pool: 'forks',
    testTimeout: 120_000,
    hookTimeout: 60_000,
    fileParallelism: false,
  },
});
