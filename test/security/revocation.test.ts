import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { decisionMessage, decisionWait } from '../../common/decision';
import { DecisionSchema } from '../../common/decision-schema';
import { DecisionRefusedError } from '../../common/errors';
import type { RunRecord } from '../../common/run-record';
import { DECISION_NAMESPACE } from '../../common/sshsig';
import { LoopwrightClient } from '../../client/loopwright-client';
import { generateSigningKey, signMessage } from '../../client/signing';
import { startModelServer } from '../../model-server/server';
import { decisionSignal } from '../../workflows/messages';
import { script, workerSays } from '../helpers/scripts';
import { clientEnv, testStack } from '../helpers/temporal';

/**
 * A run pins the worker's allowed signers when it starts, so a key added later never decides for
 * it; a key the operator removes while the run waits (a lost laptop, someone who left) must stop
 * deciding for it too, on the update and on the signal alike. One run on a real worker.
 */
const dir = mkdtempSync(path.join(tmpdir(), 'lw-revoke-'));
const key = (name: string) => path.join(dir, 'keys', name);
const alice = generateSigningKey(key('alice'), 'alice');
const bob = generateSigningKey(key('bob'), 'bob');
const carol = generateSigningKey(key('carol'), 'carol');
const allowedSigners = path.join(dir, 'allowed_signers');
const line = (name: string, publicKey: string) => `${name} namespaces="${DECISION_NAMESPACE}" ${publicKey}`;

test('a key removed from the allowed signers while a run waits no longer decides for it; one added since never did', async () => {
  writeFileSync(allowedSigners, [line('alice', alice.publicKey), line('bob', bob.publicKey), ''].join('\n'));
  const model = await startModelServer({ script: script(workerSays(1, 'draft', { times: undefined })), port: 0 });
  const stack = await testStack('revocation', model.url, { LOOPWRIGHT_ALLOWED_SIGNERS: allowedSigners });
  const clients: LoopwrightClient[] = [];
  const as = async (name: string) => {
    const c = await LoopwrightClient.connect({
      env: clientEnv({ LOOPWRIGHT_TASK_QUEUE: stack.taskQueue, LOOPWRIGHT_SIGNING_KEY: key(name) }),
    });
    clients.push(c);
    return c;
  };
  try {
    const record = await stack.run(async () => {
      const { workflowId, runId } = await stack.client.run('evaluate-optimize', {
        task: 'Write.',
        checks: [{ kind: 'human', name: 'editor', approvers: [] }],
      });
      const waiting = await stack.client.wait(workflowId);
      expect(waiting).toMatchObject({ state: 'awaiting_human', trust: { recheckSigners: true } });

      // The operator revokes bob and adds carol after the run pinned its list.
      writeFileSync(allowedSigners, [line('alice', alice.publicKey), line('carol', carol.publicKey), ''].join('\n'));
      const bobs = await as('bob');
      const refused = bobs.decide(workflowId, { kind: 'approve', by: 'bob' });
      await expect(refused).rejects.toThrow(DecisionRefusedError);
      await expect(refused).rejects.toThrow(/key SHA256:\S+ may no longer sign as "bob": .*no longer list it/);
      await expect((await as('carol')).decide(workflowId, { kind: 'approve', by: 'carol' })).rejects.toThrow(
        /is not in the worker's allowed signers/,
      );
      // The signal path checks the same.
      const parsed = DecisionSchema.parse({ kind: 'approve', id: 'bob-signal-1', by: 'bob' });
      const handle = stack.client.temporal.workflow.getHandle(workflowId);
      await handle.signal(decisionSignal, {
        ...parsed,
        signature: signMessage(
          key('bob'),
          DECISION_NAMESPACE,
          decisionMessage(workflowId, parsed, { firstRunId: runId, wait: decisionWait(waiting) }),
        ),
      });
      let live: RunRecord;
      do live = await stack.client.status(workflowId);
      while (!live.decisions.some((d) => d.id === 'bob-signal-1'));
      expect(live.state).toBe('awaiting_human');
      expect(live.decisions.find((d) => d.id === 'bob-signal-1')).toMatchObject({
        status: 'refused',
        reason: expect.stringMatching(/may no longer sign as "bob"/),
      });
      // Alice, still listed, decides.
      expect(await (await as('alice')).decide(workflowId, { kind: 'approve', by: 'alice' })).toMatchObject({
        verified: true,
        fingerprint: alice.fingerprint,
      });
      return (await handle.result()) as RunRecord;
    });
    expect(record).toMatchObject({ state: 'completed' });
    expect(record.decisions.filter((d) => d.status === 'applied')).toEqual([
      expect.objectContaining({ by: 'alice', verified: true }),
    ]);
    expect(record.attempts[0]?.verdicts.find((v) => v.kind === 'human')).toMatchObject({ passed: true, by: 'alice' });
  } finally {
    for (const c of clients) await c.close();
    await stack.close();
    await model.close();
  }
});
