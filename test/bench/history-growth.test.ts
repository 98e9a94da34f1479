import { rmSync } from 'node:fs';
import { startModelServer, type ModelServer } from '../../model-server/server';
import { BENCH_MARKER, benchScript, makeBenchWorkspace } from '../../scripts/bench/bench-model';
import { encodedHistory, measureTurns, TURN_ACTIVITY } from '../../scripts/bench/history-growth';
import { runLoopwrightSession } from '../../scripts/bench/loopwright-session';
import { bundleNaiveWorkflow, runNaiveSession } from '../../scripts/bench/naive-session';
import { testAddress } from '../helpers/temporal';
import { must } from '../../common/must';

/** The history-growth bench, short: 7 tool turns and an answer, Loopwright and naive side by side. */
const TURNS = 8;
/** Slack for what does change per turn in Loopwright's history: numbers, refs, turn 1's task. */
const SLACK_BYTES = 512;

let model: ModelServer | undefined;
let workspace: string | undefined;

afterAll(async () => {
  await model?.close();
  if (workspace) rmSync(workspace, { recursive: true, force: true });
});

test("Loopwright history per turn stays flat over 8 turns while the naive baseline grows by each turn's tool result", async () => {
  model = await startModelServer({ script: benchScript(TURNS), port: 0 });
  workspace = makeBenchWorkspace();
  const common = { address: testAddress(), modelUrl: model.url, turns: TURNS, workspace };
  const [lw, naive] = await Promise.all([
    runLoopwrightSession({ ...common, workflowCode: { codePath: process.env.LOOPWRIGHT_WORKFLOW_BUNDLE! } }),
    bundleNaiveWorkflow().then((code) => runNaiveSession({ ...common, workflowCode: code })),
  ]);
  const a = measureTurns(lw.history, TURN_ACTIVITY.loopwright);
  const b = measureTurns(naive.history, TURN_ACTIVITY.naive);
  expect(a.turns).toHaveLength(TURNS);
  expect(b.turns).toHaveLength(TURNS);

  // Both sessions read the same ~2 KB file each tool turn.
  expect(lw.newContent).toHaveLength(TURNS - 1);
  expect(naive.newContent).toEqual(lw.newContent);
  const content = must(lw.newContent[0], 'the session has tool turns');
  expect(content).toBeGreaterThan(1500);

  // Loopwright: no turn outgrows the first tool turn by more than the slack, the last tool turn included.
  const firstTool = must(a.turns[0], 'the session has turns').bytes;
  expect(a.turns[TURNS - 2]?.bytes).toBeLessThanOrEqual(firstTool + SLACK_BYTES);
  expect(a.turns[TURNS - 1]?.bytes).toBeLessThanOrEqual(firstTool + SLACK_BYTES);
  expect(Math.max(...a.turns.map((t) => t.bytes))).toBeLessThanOrEqual(firstTool + SLACK_BYTES);
  // naive: the last turn carries every earlier tool result.
  expect(b.turns[TURNS - 1]?.bytes).toBeGreaterThan(
    must(b.turns[0], 'the naive session has turns').bytes + 3 * content,
  );
  expect(b.turns[TURNS - 1]?.bytes).toBeGreaterThan(
    must(a.turns[TURNS - 1], `the session has ${TURNS} turns`).bytes + (TURNS - 2) * content,
  );

  // The file's last line reaches history only when whole tool results do.
  expect(encodedHistory(lw.history).includes(BENCH_MARKER)).toBe(false);
  expect(encodedHistory(naive.history).includes(BENCH_MARKER)).toBe(true);
}, 60_000);
