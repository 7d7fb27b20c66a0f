/**
 * Exit statuses, one table for the run, the suite and studies, and the
 * exception that ends the program with one once its output is written.
 */
export const EXIT = {
  ok: 0,
  /** Could not run, or the run broke off: refused, closed, protocol error, timeout. */
  failed: 1,
  usage: 2,
  /** The server answered some requests with error replies. */
  errorReplies: 3,
  /** Reads returned values that differ from what was written (or, in get mode with --verify-get, nothing). */
  verifyFailed: 4,
  /** A gate was missed: --slo on a run or suite, --fail-if on compare. */
  gateMissed: 5,
  /** SIGHUP: the terminal or the ssh session closed. */
  sighup: 129,
  sigint: 130,
  sigterm: 143,
} as const;

/** Thrown to end the program with a status once its output is written. */
export class Exit extends Error {
  constructor(readonly code: number) {
    super(`exit ${code}`);
  }
}
