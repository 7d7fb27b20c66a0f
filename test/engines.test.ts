/**
 * The one engine-selection helper (helpers/engines.ts): under
 * RESPBENCH_REQUIRE_NATIVE=1 a native engine that does not load fails the
 * tests instead of leaving them to js alone.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { engines, requireNativeIfAsked } from './helpers/engines.js';
import { runJson } from './helpers/servers.js';

const asked = process.env.RESPBENCH_REQUIRE_NATIVE;
afterEach(() => {
  if (asked === undefined) delete process.env.RESPBENCH_REQUIRE_NATIVE;
  else process.env.RESPBENCH_REQUIRE_NATIVE = asked;
});

describe('engines()', () => {
  it('a native engine that does not load is an error when RESPBENCH_REQUIRE_NATIVE=1, and js alone otherwise', () => {
    process.env.RESPBENCH_REQUIRE_NATIVE = '1';
    expect(() => requireNativeIfAsked(false, 'no addon')).toThrow(/native engine does not load \(no addon\), and RESPBENCH_REQUIRE_NATIVE=1/);
    expect(() => requireNativeIfAsked(true, 'no addon')).not.toThrow();
    delete process.env.RESPBENCH_REQUIRE_NATIVE;
    expect(() => requireNativeIfAsked(false, 'no addon')).not.toThrow();
  });

  it('lists native exactly when the CLI runs it here', async () => {
    // Port 1 refuses at once; the result still names the engine that ran.
    const { result } = await runJson(['--engine', 'auto', '--port', '1', '--requests', '1', '--timeout', '2s']);
    expect(engines()).toEqual(result.engine === 'native' ? ['js', 'native'] : ['js']);
  });
});
