/**
 * The error every bad flag value or combination becomes: the CLI prints its
 * one line and exits 2 (bin.ts, cli.ts), with no stack trace.
 */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}
