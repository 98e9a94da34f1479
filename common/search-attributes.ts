import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

/**
 * The search attributes every Loopwright run carries, so the Web UI and `loopwright list`
 * can filter runs. They must be registered on the server: `loopwright dev` passes
 * `--search-attribute` flags, docker-compose.yml runs `temporal operator search-attribute create`.
 */
export const LoopName = defineSearchAttributeKey('LoopName', SearchAttributeType.KEYWORD);
export const LoopState = defineSearchAttributeKey('LoopState', SearchAttributeType.KEYWORD);
export const LoopAttempt = defineSearchAttributeKey('LoopAttempt', SearchAttributeType.INT);
export const LoopAutonomy = defineSearchAttributeKey('LoopAutonomy', SearchAttributeType.KEYWORD);
export const LoopItemKey = defineSearchAttributeKey('LoopItemKey', SearchAttributeType.KEYWORD);
export const LoopCostUsd = defineSearchAttributeKey('LoopCostUsd', SearchAttributeType.DOUBLE);
export const LoopTokens = defineSearchAttributeKey('LoopTokens', SearchAttributeType.INT);
/** `needed` while a run waits for a person to audit it (L3 effects, audit samples), then `reviewed`. */
export const LoopAudit = defineSearchAttributeKey('LoopAudit', SearchAttributeType.KEYWORD);

/** Name and server-side type (as the Temporal CLI spells it) of each search attribute. */
export const SEARCH_ATTRIBUTES: ReadonlyArray<{ name: string; type: 'Keyword' | 'Int' | 'Double' }> = [
  { name: 'LoopName', type: 'Keyword' },
  { name: 'LoopState', type: 'Keyword' },
  { name: 'LoopAttempt', type: 'Int' },
  { name: 'LoopAutonomy', type: 'Keyword' },
  { name: 'LoopItemKey', type: 'Keyword' },
  { name: 'LoopCostUsd', type: 'Double' },
  { name: 'LoopTokens', type: 'Int' },
  { name: 'LoopAudit', type: 'Keyword' },
];
