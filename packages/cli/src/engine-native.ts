/**
 * The native engine: loads @respbench/native (the napi-rs addon) and adapts it
 * to the Engine interface. Loading may fail (no prebuilt binary for this
 * platform, not built): loadNativeEngine then says why, and the CLI falls
 * back to the JS engine under --engine auto.
 */
import type { Engine } from './plan.js';

export interface NativeLoad {
  engine: Engine | null;
  /** Why the addon could not be loaded, when engine is null. */
  reason: string | null;
}

export function loadNativeEngine(): NativeLoad {
  return { engine: null, reason: 'the native engine is not built yet' };
}
