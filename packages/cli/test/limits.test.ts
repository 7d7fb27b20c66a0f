import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { LIMITS } from '../src/engine-js/limits.js';

describe('the limits table', () => {
  it('equals test/vectors/limits.json (the Rust crate checks the same file), keys in the same order', () => {
    const text = readFileSync(new URL('../../../test/vectors/limits.json', import.meta.url), 'utf8');
    expect(JSON.stringify(LIMITS)).toBe(JSON.stringify(JSON.parse(text)));
  });
});
