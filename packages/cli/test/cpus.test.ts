/** --cpus lists (issue 14): taskset -c's syntax in and out. */
import { describe, expect, it } from 'vitest';
import { formatCpuList, parseCpuList, pinnedArgv } from '../src/cpus.js';

describe('CPU lists', () => {
  it('reads taskset -c lists: numbers and ranges, each CPU once, ascending', () => {
    expect(parseCpuList('--cpus', '0-1,3')).toEqual([0, 1, 3]);
    expect(parseCpuList('--cpus', '3,0-1,1')).toEqual([0, 1, 3]);
    expect(parseCpuList('--cpus', '5')).toEqual([5]);
  });

  it('refuses what is not one, naming the flag', () => {
    for (const bad of ['', 'x', '1-', '-1', '1,,2', '0-1-2', '2-1', '1024', ' , ']) expect(() => parseCpuList('--cpus', bad), bad).toThrow(/^--cpus /);
  });

  it('writes them back short, and runs a command under taskset -c', () => {
    expect(formatCpuList([0, 1, 2, 5, 7, 8])).toBe('0-2,5,7-8');
    expect(formatCpuList(parseCpuList('x', '3,0-1'))).toBe('0-1,3');
    expect(pinnedArgv([2, 3], ['redis-server', '--port', '1'])).toEqual(['taskset', '-c', '2-3', 'redis-server', '--port', '1']);
  });
});
