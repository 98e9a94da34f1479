import { isGrpcServiceError, ServiceError, WorkflowNotFoundError } from '@temporalio/client';
import { NamespaceNotFoundError } from '@temporalio/common';
import { ConfigError, LoopwrightError, RunNotFoundError, ServerUnavailableError, UsageError } from '../common/errors';
import { escapeLine } from '../common/terminal';

/** Where the CLI was talking to, for messages: TEMPORAL_ADDRESS and TEMPORAL_NAMESPACE as read. */
export interface ServiceContext {
  address: string;
  namespace: string;
}

/** gRPC status codes (https://grpc.io/docs/guides/status-codes/). */
const CODE = {
  CANCELLED: 1,
  UNKNOWN: 2,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  ALREADY_EXISTS: 6,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9,
  ABORTED: 10,
  OUT_OF_RANGE: 11,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  UNAUTHENTICATED: 16,
} as const;

/** The server's text in one line, without gRPC's `3 INVALID_ARGUMENT: ` prefix, at most 300 characters. */
function serverText(err: { details?: string; message: string }): string {
  const text = (err.details || err.message)
    .replace(/^\d+ [A-Z_]+: /, '')
    .replace(/\s+/g, ' ')
    .trim();
  return escapeLine(text.length > 300 ? `${text.slice(0, 300)}…` : text);
}

/**
 * A Temporal or gRPC error as a LoopwrightError with one line that says whose fault it is:
 * the user's input or configuration (a namespace that does not exist, a payload or id over the
 * server's limits, a query the server refuses, credentials) is a UsageError or ConfigError
 * (exit 2); a server that does not answer is a ServerUnavailableError (exit 2); anything else the
 * server failed at is a LoopwrightError (exit 1). Not a service error: undefined.
 */
export function serviceError(err: unknown, ctx: ServiceContext): LoopwrightError | undefined {
  if (err instanceof LoopwrightError) return err;
  if (err instanceof NamespaceNotFoundError) return namespaceMissing(err.namespace || ctx.namespace, ctx);
  if (err instanceof WorkflowNotFoundError && err.workflowId) return new RunNotFoundError(err.workflowId);
  const grpc = isGrpcServiceError(err)
    ? err
    : err instanceof ServiceError && isGrpcServiceError(err.cause)
      ? err.cause
      : undefined;
  if (!grpc)
    return err instanceof ServiceError
      ? new LoopwrightError(`the Temporal server at ${ctx.address} failed the request: ${serverText(err)}`, {
          cause: err,
        })
      : undefined;
  const text = serverText(grpc);
  switch (grpc.code) {
    case CODE.UNAVAILABLE:
      return new ServerUnavailableError(ctx.address, { cause: err });
    case CODE.NOT_FOUND:
      if (/namespace/i.test(text)) return namespaceMissing(ctx.namespace, ctx);
      return new UsageError(`not found on the Temporal server: ${text}: check the id with \`loopwright list\``, {
        cause: err,
      });
    case CODE.INVALID_ARGUMENT:
    case CODE.OUT_OF_RANGE:
      if (/size|too large|exceeds|limit/i.test(text))
        return new UsageError(`the Temporal server refused the request as too large: ${text}: make the input smaller`, {
          cause: err,
        });
      if (/query/i.test(text))
        return new UsageError(`the Temporal server refused the list filter: ${text}`, { cause: err });
      return new UsageError(`the Temporal server refused the request: ${text}`, { cause: err });
    case CODE.RESOURCE_EXHAUSTED:
      if (/message larger than|max|size/i.test(text))
        return new UsageError(`the request is too large for the Temporal server: ${text}: make the input smaller`, {
          cause: err,
        });
      return new LoopwrightError(
        `the Temporal server at ${ctx.address} is over its rate limits: ${text}: try again later`,
        { cause: err },
      );
    case CODE.ALREADY_EXISTS:
      return new UsageError(`already exists on the Temporal server: ${text}: choose another id`, { cause: err });
    case CODE.FAILED_PRECONDITION:
      return new UsageError(`the Temporal server refused the request: ${text}`, { cause: err });
    case CODE.PERMISSION_DENIED:
    case CODE.UNAUTHENTICATED:
      return new ConfigError(
        `the Temporal server at ${ctx.address} refused access to namespace ${escapeLine(ctx.namespace)}: ${text}: check TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE and your credentials`,
        { cause: err },
      );
    case CODE.UNIMPLEMENTED:
      return new ConfigError(
        `the Temporal server at ${ctx.address} does not support this request (${text}): is it a Temporal server of version 1.24 or later? check TEMPORAL_ADDRESS`,
        { cause: err },
      );
    case CODE.DEADLINE_EXCEEDED:
    case CODE.CANCELLED:
      return new LoopwrightError(`the Temporal server at ${ctx.address} did not answer in time: ${text}: try again`, {
        cause: err,
      });
    default:
      return new LoopwrightError(`the Temporal server at ${ctx.address} failed the request: ${text}`, { cause: err });
  }
}

function namespaceMissing(namespace: string, ctx: ServiceContext): ConfigError {
  return new ConfigError(
    `namespace "${escapeLine(namespace)}" does not exist on the Temporal server at ${ctx.address}: set TEMPORAL_NAMESPACE to an existing one, or create it with \`temporal operator namespace create --namespace ${escapeLine(namespace)}\``,
  );
}
