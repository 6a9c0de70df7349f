/**
 * Context compaction through surface replace: a model-written summary
 * shadows older turns in the derived history while the log keeps them.
 *
 * @module
 */

export {
  type CompactionOutcome,
  compactionRange,
  compactSession,
  type CompactSessionOptions,
  DEFAULT_COMPACTION_INSTRUCTIONS,
} from "./compact_session.ts";
export {
  type CompactionOptions,
  compactionPlugin,
  type CompactionService,
  type CompactionServices,
  estimateTokens,
} from "./compaction_plugin.ts";
