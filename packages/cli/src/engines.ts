/**
 * Engine choice. `auto` takes the native engine when its addon loads and
 * otherwise the JS engine, saying once why; `native` insists; `js` never
 * tries the addon.
 */
import { jsEngine } from './engine-js.js';
import { loadNativeEngine } from './engine-native.js';
import { fallbackNoticeOnce } from './fallback-notice.js';
import type { Engine } from './plan.js';
import type { EngineChoice } from './validate.js';

export class EngineUnavailableError extends Error {}

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
