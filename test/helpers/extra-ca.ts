/**
 * The machine's NODE_EXTRA_CA_CERTS, kept from every process of an e2e run
 * (test/vitest.config.ts sets it aside before any worker starts) and handed
 * back to those that may need it to reach the network (npm). Node reads and
 * parses that bundle as it starts, in every process, before any code runs:
 * on the VM the suite is tuned on (a bundle of some 140 certificates) 50 to
 * 90 ms of CPU a start (docs/design.md), over the 1,200-odd CLI starts of a suite. No test's
 * TLS rests on it: each names its own CA with --cacert or --cacertdir.
 */
const EXTRA_CA = 'NODE_EXTRA_CA_CERTS';
const KEPT = 'RESPBENCH_TEST_NODE_EXTRA_CA_CERTS';

/** Moves NODE_EXTRA_CA_CERTS out of this process's environment, and so out of every process it starts. */
export function setExtraCaAside(env: NodeJS.ProcessEnv = process.env): void {
  if (env[EXTRA_CA] === undefined) return;
  env[KEPT] = env[EXTRA_CA];
  delete env[EXTRA_CA];
}

/** `env` with the machine's NODE_EXTRA_CA_CERTS back, if it had one. */
export function withExtraCa(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const kept = env[KEPT];
  if (kept === undefined) return env;
  const out: NodeJS.ProcessEnv = { ...env, [EXTRA_CA]: kept };
  delete out[KEPT];
  return out;
}
