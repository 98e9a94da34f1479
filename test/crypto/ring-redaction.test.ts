import { readFileSync } from 'node:fs';
import { redact } from '../../common/redact';
import { summarize } from '../../client/output';
import { keyRingFromEnv } from '../../crypto/keyring';
import { processRedaction, ringSecrets } from '../../crypto/ring-redaction';
import { redactingLog } from '../../workers/runtime';
import type { RunRecord } from '../../common/run-record';
import { judgeSays, script, workerSays } from '../helpers/scripts';
import { startModelServer } from '../../model-server/server';
import { testStack } from '../helpers/temporal';

/**
 * Key-ring material is 32 random bytes: no credential pattern knows its shape, and decoded it
 * reads as nothing, so it is redacted only because every process that prints or writes a run
 * knows its own ring's keys. Here the suite's ring (global-setup) reaches a run as its agent's
 * answer, as it would if an agent read the key file.
 */
const ring = keyRingFromEnv(process.env)!;
const [[id, key]] = [...ring.keys.entries()] as [[string, Buffer]];
const forms = [
  key.toString('base64'),
  key.toString('base64').replace(/=+$/, ''),
  key.toString('base64url'),
  key.toString('hex'),
];
const leak = `the ring says ${id}=${forms[0]}; hex ${forms[3]}; url ${forms[2]}.`;
const holdsKey = (text: string) => forms.some((f) => text.includes(f));

test("a process's redaction holds its ring's keys in every printed form, and nothing else of the text goes", () => {
  expect(ringSecrets(undefined)).toEqual([]);
  expect(ringSecrets(ring)).toEqual(expect.arrayContaining(forms));
  // Without the ring the key goes through: no pattern catches it.
  expect(holdsKey(redact(leak, { names: [], values: [] }))).toBe(true);
  const r = processRedaction({ LOOPWRIGHT_KEYS: process.env.LOOPWRIGHT_KEYS });
  const out = redact(leak, r);
  expect(holdsKey(out)).toBe(false);
  expect(out).toContain(`the ring says ${id}=[redacted]`);
  // The key file itself, printed whole.
  expect(holdsKey(redact(readFileSync(process.env.LOOPWRIGHT_KEYS!, 'utf8'), r))).toBe(false);
  // A ring that cannot be read adds nothing and does not throw.
  expect(processRedaction({ LOOPWRIGHT_KEYS: '/nonexistent/keys' }).values).not.toContain(forms[0]);
  // The worker's log.
  const lines: string[] = [];
  redactingLog(processRedaction({ LOOPWRIGHT_KEYS: process.env.LOOPWRIGHT_KEYS }), (l) => lines.push(l))({
    level: 'WARN',
    timestampNanos: 0n,
    message: 'Activity failed',
    meta: { error: leak },
  } as never);
  expect(lines.length).toBeGreaterThan(0);
  expect(holdsKey(lines.join('\n'))).toBe(false);
});

test("a run whose answer holds the ring's key: status and the Web UI's current details (the judge quotes it) show it redacted", async () => {
  const model = await startModelServer({
    script: script(workerSays(1, leak), judgeSays(1, false, [`quotes ${leak}`], 'do not')),
    port: 0,
  });
  const stack = await testStack('ring-redaction', model.url);
  try {
    await stack.run(async () => {
      const { workflowId } = await stack.client.run('evaluate-optimize', {
        task: 'Say what the ring holds.',
        rubric: ['is short'],
        maxAttempts: 1,
      });
      const record: RunRecord = await stack.client.wait(workflowId);
      expect(record.state).toBe('awaiting_human');
      // The record itself holds the answer (decoded): what is printed must not.
      expect(holdsKey(JSON.stringify(record))).toBe(true);
      const status = summarize(record, stack.client.redaction).join('\n');
      expect(status).toContain('[redacted]');
      expect(holdsKey(status)).toBe(false);
      const handle = stack.client.temporal.workflow.getHandle(workflowId);
      const meta = (await handle.query('__temporal_workflow_metadata')) as { currentDetails?: string };
      expect(meta.currentDetails).toContain('awaiting_human');
      expect(meta.currentDetails).toContain('quotes the ring says');
      expect(holdsKey(meta.currentDetails ?? '')).toBe(false);
      await handle.cancel();
    });
  } finally {
    await stack.close();
    await model.close();
  }
});
