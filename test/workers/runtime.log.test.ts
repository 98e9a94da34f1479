import { redactionFromEnv } from '../../common/redact';
import { redactingLog } from '../../workers/runtime';

test('the worker log redacts its own secrets and credential shapes in the message and the failure it carries, and escapes control sequences', () => {
  const lines: string[] = [];
  const log = redactingLog(redactionFromEnv({ MY_SETTING: 'sunshine-zz-4242', PATH: '/usr/bin' }), (l) =>
    lines.push(l),
  );
  const error = new Error(`tool failed: token ghp_${'a'.repeat(36)} and sunshine-zz-4242\u001b]0;owned\u0007`);
  log({
    level: 'WARN',
    timestampNanos: 1_700_000_000_000_000_000n,
    message: 'Activity failed: sunshine-zz-4242',
    meta: { activityType: 'runTool', error },
  });
  expect(lines).toHaveLength(1);
  const [line] = lines;
  expect(line).toMatch(/^2023-11-14T22:13:20.000Z \[WARN\] Activity failed: \[redacted\] /);
  expect(line).toContain('runTool');
  expect(line).not.toContain('sunshine-zz-4242');
  expect(line).not.toContain('ghp_aaaa');
  expect(line).not.toContain('\u001b');
  expect(line).toContain('tool failed: token [redacted]');
  expect(line?.endsWith('\n')).toBe(true);
});
