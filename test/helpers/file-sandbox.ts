/**
 * Each end-to-end test file runs in a sandbox of its own, so that files can
 * run side by side (test/vitest.config.ts): a fresh temp directory becomes
 * TMPDIR for the file's process and everything it starts (servers' data
 * directories, studies' working directories, certificates, clusters), and
 * "the processes this file started" are the processes that carry that
 * TMPDIR in their environment or work inside it (redis-server writes its
 * title over its environment, but it changes into its `--dir`). So a check
 * for leftovers (helpers/servers.ts `liveProcesses`) or for temp directories
 * a run left behind sees this file's alone, never another file's running
 * beside it. Loaded as a vitest setup file: it runs in each file's process
 * before the file itself.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll } from 'vitest';

const sandbox = mkdtempSync(path.join(tmpdir(), 'respbench-e2e-'));
process.env.TMPDIR = sandbox;
// The name helpers/servers.ts looks for (a TMPDIR alone could be anyone's).
process.env.RESPBENCH_TEST_SANDBOX = sandbox;

// Registered first, so it runs after the file's own afterAll hooks (vitest runs after-hooks as a stack).
// A process still writing into it may make the first tries fail; what is left then is only a temp directory.
afterAll(() => {
  try {
    rmSync(sandbox, { recursive: true, force: true, maxRetries: 5 });
  } catch {
    // Left for the OS's temp cleaning.
  }
});
