/**
 * SIGINT and SIGTERM while a run or a study is under way: the handler is
 * called for each signal (a study counts them: the second one kills), and
 * the caller removes it once the work is done.
 */
import { EXIT } from './exit.js';

export type StopSignal = 'SIGINT' | 'SIGTERM';

/** The exit status a signal ends the program with (128 + signal number). */
export const SIGNAL_EXIT: Record<StopSignal, number> = { SIGINT: EXIT.sigint, SIGTERM: EXIT.sigterm };

/** Calls `onSignal` on every SIGINT/SIGTERM until the returned function is called. */
export function onStopSignals(onSignal: (signal: StopSignal) => void): () => void {
  const onInt = () => onSignal('SIGINT');
  const onTerm = () => onSignal('SIGTERM');
  process.on('SIGINT', onInt);
  process.on('SIGTERM', onTerm);
  return () => {
    process.off('SIGINT', onInt);
    process.off('SIGTERM', onTerm);
  };
}
