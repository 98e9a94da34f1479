import { Connection } from '@temporalio/client';
import { ConfigError } from '../common/errors';
import { SEARCH_ATTRIBUTES } from '../common/search-attributes';
import type { TemporalConnectionOptions } from '../server/temporal-connection';

/**
 * Refuses to start a worker on a namespace that lacks Loopwright's search attributes: the server
 * would reject every run's first workflow task ("search attribute LoopName is not defined") and
 * the runs would stall without a word. Says how to register them instead.
 */
export async function checkSearchAttributes(
  address: string,
  namespace: string,
  secure: TemporalConnectionOptions = {},
): Promise<void> {
  const connection = await Connection.connect({ address, connectTimeout: '5s', ...secure });
  try {
    const listed = await connection.operatorService.listSearchAttributes({ namespace });
    const known = new Set(Object.keys(listed.customAttributes ?? {}));
    const missing = SEARCH_ATTRIBUTES.filter((a) => !known.has(a.name));
    if (missing.length === 0) return;
    const fix = [...new Set(missing.map((a) => a.type))]
      .map((type) => {
        const names = missing
          .filter((a) => a.type === type)
          .map((a) => `--name ${a.name}`)
          .join(' ');
        return `temporal operator search-attribute create --namespace ${namespace} ${names} --type ${type}`;
      })
      .join(' && ');
    throw new ConfigError(
      `namespace ${namespace} at ${address} lacks the search attributes ${missing.map((a) => a.name).join(', ')}: register them with \`${fix}\` (or run deploy/temporal-setup.sh)`,
    );
  } finally {
    await connection.close();
  }
}
