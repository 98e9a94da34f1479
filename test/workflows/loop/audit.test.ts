import { inAuditSample } from '../../../workflows/loop/audit';
import { judgeSays, script, workerSays } from '../../helpers/scripts';
import { scriptedStacks } from '../../helpers/temporal';

/** Spot checks (auditSample) and verification debt (maxPendingReviews) on the dev server. */
const setup = scriptedStacks();

const task = (extra: Record<string, unknown>) => ({ task: 'T.', rubric: ['r'], ...extra });
async function eventually<T>(fn: () => Promise<T>, ok: (v: T) => boolean): Promise<T> {
  for (let i = 0; ; i++) {
    const v = await fn();
    if (ok(v) || i > 50) return v;
    await new Promise((r) => setTimeout(r, 200));
  }
}

test('the audit sample is a reproducible share of workflow ids', () => {
  const ids = Array.from({ length: 2000 }, (_, i) => `loop/run-${i}`);
  const share = ids.filter((id) => inAuditSample(id, 0.05)).length / ids.length;
  expect(share).toBeGreaterThan(0.03);
  expect(share).toBeLessThan(0.07);
  expect(ids.map((id) => inAuditSample(id, 0.05))).toEqual(ids.map((id) => inAuditSample(id, 0.05)));
  expect(inAuditSample('x', 0)).toBe(false);
  expect(inAuditSample('x', 1)).toBe(true);
});

test('a passed run in the audit sample shows in list --needs-audit until a person audits it', async () => {
  const { stack } = await setup.with('audit', script(workerSays(1, 'ok'), judgeSays(1, true)));
  const s = stack;
  await s.run(async () => {
    const { workflowId } = await s.client.run('evaluate-optimize', task({ auditSample: 1 }));
    const done = await s.client.wait(workflowId);
    expect(done).toMatchObject({ state: 'completed', stopReason: 'passed', audit: { needed: true } });
    const listed = await eventually(
      () => s.client.list({ needsAudit: true, limit: 500 }),
      (rows) => rows.some((r) => r.workflowId === workflowId),
    );
    expect(listed.map((r) => r.workflowId)).toContain(workflowId);
    await expect(s.client.decide(workflowId, { kind: 'approve', by: 'eve' })).rejects.toThrow(
      /not waiting for a decision/,
    );
    await s.client.decide(workflowId, { kind: 'audit', by: 'ivy', verdict: 'bad', note: 'the rubric is too weak' });
    const closed = (await s.client.temporal.workflow.getHandle(workflowId).result()) as { audit: unknown };
    expect(closed.audit).toMatchObject({
      needed: true,
      reviewedBy: 'ivy',
      verdict: 'bad',
      note: 'the rubric is too weak',
    });
    const after = await eventually(
      () => s.client.list({ needsAudit: true, limit: 500 }),
      (rows) => !rows.some((r) => r.workflowId === workflowId),
    );
    expect(after.map((r) => r.workflowId)).not.toContain(workflowId);
  });
});

test('with maxPendingReviews reached, a triggered run stops at once with the reason and calls no model', async () => {
  const { model, stack } = await setup.with(
    'debt',
    script(workerSays(1, 'bad', { times: 5 }), judgeSays(1, false, ['r'], '', { times: 5 })),
  );
  const s = stack;
  await s.run(async () => {
    const loopInput = task({ maxAttempts: 1, maxPendingReviews: 1 });
    const first = await s.client.run('evaluate-optimize', loopInput);
    expect((await s.client.wait(first.workflowId)).state).toBe('awaiting_human');
    await eventually(
      () => s.client.list({ state: 'awaiting_human', limit: 500 }),
      (rows) => rows.some((r) => r.workflowId === first.workflowId),
    );
    const calls = model.requests.length;
    const second = await s.client.run('evaluate-optimize', loopInput, { trigger: { kind: 'event' } });
    const held = await s.client.wait(second.workflowId);
    expect(held).toMatchObject({ state: 'blocked', stopReason: 'verification_debt', attempts: [] });
    expect(held.error).toMatch(
      /verification debt: \d+ runs of loop evaluate-optimize wait for a human \(maxPendingReviews 1\)/,
    );
    expect(model.requests.length).toBe(calls);
    const manual = await s.client.run('evaluate-optimize', loopInput);
    expect((await s.client.wait(manual.workflowId)).state).not.toBe('blocked');
    for (const id of [first.workflowId, manual.workflowId])
      await s.client.temporal.workflow.getHandle(id).terminate('test done');
  });
});
