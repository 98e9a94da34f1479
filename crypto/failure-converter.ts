import { DefaultFailureConverter } from '@temporalio/common';

/**
 * The failure converter of an encrypting Loopwright client or worker: a failure's message and
 * stack trace travel as an encoded payload (so the payload codec encrypts them), not in clear.
 * Loaded by path (`failureConverterPath`), as Temporal loads converters into workflow code.
 */
export const failureConverter = new DefaultFailureConverter({ encodeCommonAttributes: true });
