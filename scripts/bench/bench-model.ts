import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseModelScript, type ModelRule, type ModelScript } from '../../model-server/script';

/** The file every tool turn reads, relative to the workspace. */
export const BENCH_FILE = 'notes.txt';
/** The last line of {@link BENCH_FILE}: text that only reaches history if tool results do. */
export const BENCH_MARKER = 'END-OF-NOTES-4f1c9a';
/** The final answer of the scripted session. */
export const BENCH_ANSWER = 'The notes describe 31 incidents; all were resolved.';

/** The ~2 KB text file the agent reads each turn: numbered incident lines, then the marker. */
export function benchFileText(): string {
  const lines: string[] = [];
  for (let i = 1; i <= 31; i++)
    lines.push(`incident ${String(i).padStart(2, '0')}: worker restarted, state replayed from history, ok`);
  lines.push(BENCH_MARKER);
  return `${lines.join('\n')}\n`;
}

/** A fresh folder holding {@link BENCH_FILE}. */
export function makeBenchWorkspace(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'lw-bench-ws-'));
  writeFileSync(path.join(dir, BENCH_FILE), benchFileText());
  return dir;
}

/**
 * The scripted model for a session of `turns` model turns: turns 1..turns−1 each call
 * `read_file` on {@link BENCH_FILE}, the last answers with {@link BENCH_ANSWER}, and the judge
 * passes. Rules match role, attempt and turn only (no workflow id) and never run out, so one
 * model server serves the Loopwright and the naive sessions of any length up to `turns`.
 */
export function benchScript(turns: number): ModelScript {
  const rules: ModelRule[] = [];
  for (let turn = 1; turn < turns; turn++) {
    rules.push({
      name: `turn ${turn} reads ${BENCH_FILE}`,
      match: { role: 'worker', attempt: 1, turn },
      reply: {
        content: [{ type: 'tool_use', id: `toolu_bench_${turn}`, name: 'read_file', input: { path: BENCH_FILE } }],
        stop_reason: 'tool_use',
        usage: { input_tokens: 200, output_tokens: 30 },
      },
    });
  }
  rules.push(
    {
      name: `turn ${turns} answers`,
      match: { role: 'worker', attempt: 1, turn: turns },
      reply: { content: [{ type: 'text', text: BENCH_ANSWER }], usage: { input_tokens: 300, output_tokens: 40 } },
    },
    {
      name: 'judge passes',
      match: { role: 'checker' },
      reply: {
        content: [
          {
            type: 'tool_use',
            name: 'submit_verdict',
            input: { passed: true, reason: 'meets the rubric', failed_items: [], required_correction: '' },
          },
        ],
        usage: { input_tokens: 50, output_tokens: 10 },
      },
    },
  );
  return parseModelScript({ rules }, `history-growth bench (${turns} turns)`);
}
