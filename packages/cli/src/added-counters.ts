/**
 * The reply counters of several results added up: the one sum `merge` (load
 * machines of one run) and `-x/--repeat` (rounds of one run) both make.
 */
import type { Counters } from './engine-js/counters.js';

type Counted = Pick<Counters, 'requests' | 'sets' | 'gets' | 'ok' | 'errors' | 'misses' | 'mismatches' | 'lostWrites' | 'pushes' | 'bytesOut' | 'bytesIn'>;

export function addedCounters(runs: readonly Partial<Counted>[]): Counted {
  const sum = (k: keyof Counted) => runs.reduce((n, r) => n + (r[k] ?? 0), 0);
  return {
    requests: sum('requests'),
    sets: sum('sets'),
    gets: sum('gets'),
    ok: sum('ok'),
    errors: sum('errors'),
    misses: sum('misses'),
    mismatches: sum('mismatches'),
    lostWrites: sum('lostWrites'),
    pushes: sum('pushes'),
    bytesOut: sum('bytesOut'),
    bytesIn: sum('bytesIn'),
  };
}
