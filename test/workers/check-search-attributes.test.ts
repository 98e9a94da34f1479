import { randomBytes } from 'node:crypto';
import { Connection } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time';
import { ConfigError } from '../../common/errors';
import { checkSearchAttributes } from '../../workers/check-search-attributes';
import { testAddress } from '../helpers/temporal';

describe('a worker checks the namespace for the search attributes before it starts', () => {
  test('the dev server started by the project has every search attribute registered', async () => {
    await expect(checkSearchAttributes(testAddress(), 'default')).resolves.toBeUndefined();
  });

  test('a namespace without them is refused with the command that registers them', async () => {
    const namespace = `bare-${randomBytes(3).toString('hex')}`;
    const connection = await Connection.connect({ address: testAddress() });
    try {
      await connection.workflowService.registerNamespace({
        namespace,
        workflowExecutionRetentionPeriod: msToTs('1 day'),
      });
    } finally {
      await connection.close();
    }
    const error = await checkSearchAttributes(testAddress(), namespace).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toMatch(
      new RegExp(`namespace ${namespace} at .* lacks the search attributes LoopName, LoopState, LoopAttempt`),
    );
    expect((error as Error).message).toMatch(
      /`temporal operator search-attribute create --namespace bare-\w+ --name LoopName --name LoopState --name LoopAutonomy --name LoopItemKey --name LoopAudit --type Keyword && .* --name LoopAttempt --name LoopTokens --type Int && .* --name LoopCostUsd --type Double`/,
    );
    expect((error as Error).message).not.toMatch(/\n/);
  });
});
