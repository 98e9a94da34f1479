/**
 * Durations as people and Temporal write them: `500ms`, `30s`, `5m`, `2h`, `7d`.
 * Pure, so workflows and the CLI parse them the same way.
 */
import { must } from './must';

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const DURATION = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)$/;

/** Milliseconds in `text`, or undefined when it is not a duration. */
export function parseDuration(text: string): number | undefined {
  const match = DURATION.exec(text.trim());
  const unit = match ? UNITS[must(match[2], 'DURATION has a unit group')] : undefined;
  if (!match || unit === undefined) return undefined;
  return Math.round(Number(match[1]) * unit);
}

/** True for strings `parseDuration` accepts. */
export function isDuration(text: string): boolean {
  return parseDuration(text) !== undefined;
}
