/** Programmatic API: run a Plan through an engine, read the result. */
export type { Engine, EngineName, Failure, Mode, Phase, Plan, ProgressSnapshot, RawResult, RunOptions } from './engine-js/index.js';
export type { RunResult } from './run.js';
export { jsEngine, LatencyHistogram } from './engine-js/index.js';
export { loadNativeEngine } from './engine-native.js';
export { selectEngine } from './engines.js';
export { EXIT } from './exit.js';
export { exitCodeFor, finishResult, RUN_RESULT_VERSION, runPlan } from './run.js';
export { buildPlan } from './validate.js';
export { UsageError } from './usage-error.js';
export { formatHuman, formatJson } from './output.js';
export { startServer } from './serve/server.js';
export { spawnEmbedded } from './serve/spawn.js';
