/**
 * --read-from: which member of a shard connection c reads from (readTarget),
 * the same table as crates/respbench-core/src/plan.rs's read_target test.
 */
import { describe, expect, it } from 'vitest';
import { readTarget, type ClusterPlan } from '../src/engine-js/plan.js';

const node = (port: number) => ({ host: '127.0.0.1', port });
const base: ClusterPlan = { seeds: [], nodes: [node(7000), node(7001)], slots: [[0, 16383, 0]], replicas: [[node(7002), node(7003)], []] };

describe('readTarget', () => {
  it('primary: always the primary; replica: c mod R; any: c mod (1 + R), 0 the primary; no replica: the primary', () => {
    const table = (readFrom: ClusterPlan['readFrom']) => [0, 1, 2, 3].map((c) => [readTarget({ ...base, readFrom }, c, 0), readTarget({ ...base, readFrom }, c, 1)]);
    expect(table(undefined)).toEqual([[-1, -1], [-1, -1], [-1, -1], [-1, -1]]);
    expect(table('primary')).toEqual([[-1, -1], [-1, -1], [-1, -1], [-1, -1]]);
    expect(table('replica')).toEqual([[0, -1], [1, -1], [0, -1], [1, -1]]);
    expect(table('any')).toEqual([[-1, -1], [0, -1], [1, -1], [-1, -1]]);
  });
});
