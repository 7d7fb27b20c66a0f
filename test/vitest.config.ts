import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    root: new URL('.', import.meta.url).pathname,
    include: ['**/*.test.ts'],
    pool: 'forks',
    testTimeout: 120_000,
    hookTimeout: 60_000,
    fileParallelism: false,
  },
});
