/**
 * History growth of a 50-turn agent session: Loopwright (conversation in the transcript store,
 * references in history) against a naive workflow that passes the whole conversation to every
 * model turn. Starts its own Temporal dev server and scripted model, runs both sessions, and
 * prints bytes and events per turn from the real histories:
 *   npm run build && node dist/scripts/bench/history-growth.js [turns]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';
import { startModelServer, type ModelServer } from '../../model-server/server';
import { freePort, startDevServer, type DevServer } from '../../server/dev-server';
import { findTemporalCli } from '../../server/temporal-binary';
import { benchScript, makeBenchWorkspace } from './bench-model';
import { runLoopwrightSession } from './loopwright-session';
import { measureTurns } from './measure-history';
import { bundleNaiveWorkflow, runNaiveSession } from './naive-session';
import { formatReport } from './report';
import { BUNDLER_LOGGER } from './session';

export { encodedHistory, eventBytes, fitLine, measureTurns, turnsToReach } from './measure-history';
export { runLoopwrightSession } from './loopwright-session';
export { bundleNaiveWorkflow, runNaiveSession } from './naive-session';

/** Model-turn activity types: where a turn starts in each history. */
export const TURN_ACTIVITY = { loopwright: 'modelTurn', naive: 'naiveTurn' } as const;

async function main(turns: number): Promise<void> {
  const dir = mkdtempSync(path.join(tmpdir(), 'lw-bench-'));
  process.env.LOOPWRIGHT_TRANSCRIPTS = path.join(dir, 'transcripts');
  process.env.LOOPWRIGHT_WORKTREES = path.join(dir, 'worktrees');
  const workspace = makeBenchWorkspace();
  let server: DevServer | undefined;
  let model: ModelServer | undefined;
  try {
    const cli = await findTemporalCli({ log: (line) => console.error(line) });
    const port = await freePort();
    // Kept as soon as it is up, so `finally` stops it even when a bundle fails.
    const [started, lwCode, naiveCode] = await Promise.all([
      startDevServer({ cli, dbFile: path.join(dir, 'temporal.db'), port, headless: true }).then((s) => (server = s)),
      bundleWorkflowCode({ workflowsPath: require.resolve('../../workflows'), logger: BUNDLER_LOGGER }),
      bundleNaiveWorkflow(),
    ]);
    model = await startModelServer({ script: benchScript(turns), port: 0 });
    console.log(
      `Temporal dev server ${started.address} (pid ${started.pid}), scripted model ${model.url}, ${turns}-turn session`,
    );
    const common = { address: started.address, modelUrl: model.url, turns, workspace };
    const lw = await runLoopwrightSession({
      ...common,
      workflowCode: lwCode,
      transcripts: process.env.LOOPWRIGHT_TRANSCRIPTS,
    });
    console.log(`loopwright run ${lw.workflowId}: ${(lw.ms / 1000).toFixed(1)} s`);
    const naive = await runNaiveSession({ ...common, workflowCode: naiveCode });
    console.log(`naive run ${naive.workflowId}: ${(naive.ms / 1000).toFixed(1)} s`);
    console.log('');
    const sides = [
      { name: 'Loopwright', measure: measureTurns(lw.history, TURN_ACTIVITY.loopwright), newContent: lw.newContent },
      { name: 'naive', measure: measureTurns(naive.history, TURN_ACTIVITY.naive), newContent: naive.newContent },
    ] as const;
    for (const side of sides) {
      if (side.measure.turns.length !== turns) {
        // fetchHistory returns the latest run only: a run that continued as new is cut short here.
        throw new Error(
          `the ${side.name} history has ${side.measure.turns.length} model turns, not ${turns}: did the run continue as new?`,
        );
      }
    }
    const report = formatReport(...sides);
    console.log(report.join('\n'));
  } finally {
    await model?.close();
    await server?.stop();
    rmSync(workspace, { recursive: true, force: true });
    rmSync(dir, { recursive: true, force: true });
  }
}

if (require.main === module) {
  const turns = Number(process.argv[2] ?? 50);
  if (!Number.isInteger(turns) || turns < 2 || turns > 190) {
    console.error(`error: turns must be a whole number from 2 to 190, not ${process.argv[2]}`);
    process.exit(2);
  }
  main(turns).then(
    () => process.exit(0),
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
}
