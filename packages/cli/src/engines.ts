/**
 * Engine choice. `auto` takes the native engine when its addon loads and
 * otherwise the JS engine, saying once why; `native` insists; `js` never
 * tries the addon.
 */
import { loadNativeEngine } from './engine-native.js';
import { Exit, EXIT } from './exit.js';
import { fallbackNoticeOnce } from './fallback-notice.js';
import type { Engine } from './engine-js/plan.js';
import type { EngineChoice } from './validate.js';

export class EngineUnavailableError extends Error {}

/**
 * The JS engine, loaded when a run first uses it: a native run (the usual
 * one) then parses none of its modules (a third of the program's source).
 */
const jsEngine: Engine = {
  name: 'js',
  async run(plan, options) {
    const { jsEngine: loaded } = await import('./engine-js/index.js');
    return loaded.run(plan, options);
  },
};

export interface EngineSelection {
  engine: Engine;
  /** A one-line notice for stderr when auto fell back to JS (null once it was shown on this machine). */
  notice: string | null;
}

export function selectEngine(choice: EngineChoice): EngineSelection {
  if (choice === 'js') return { engine: jsEngine, notice: null };
  const native = loadNativeEngine();
  if (native.engine) return { engine: native.engine, notice: null };
  if (choice === 'native') {
    throw new EngineUnavailableError(`--engine native: the native engine cannot be loaded: ${native.reason}`);
  }
  return { engine: jsEngine, notice: fallbackNoticeOnce(String(native.reason)) };
}

/**
 * selectEngine for the commands (a run, a study): the fallback notice goes to
 * stderr, and an engine that cannot load is one line there and exit 1.
 */
export function engineForCommand(choice: EngineChoice, stderr: (text: string) => void): Engine {
  let selection: EngineSelection;
  try {
    selection = selectEngine(choice);
  } catch (err) {
    if (err instanceof EngineUnavailableError) {
      stderr(`respbench: ${err.message}\n`);
      throw new Exit(EXIT.failed);
    }
    throw err;
  }
  if (selection.notice) stderr(`${selection.notice}\n`);
  return selection.engine;
}
