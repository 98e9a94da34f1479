import { generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Connection } from '@temporalio/client';

/** A JWT issuer for a cluster behind an authorizer: its keys served as a JWKS on 127.0.0.1. */
export interface JwtIssuer {
  /** For TEMPORAL_JWT_KEY_SOURCE1. */
  keySource: string;
  /** An RS256 JWT granting `permissions` (`default:write`, `system:admin`, ...), valid for an hour. */
  token(permissions: string[]): string;
  /** The same, signed with a key the JWKS does not hold. */
  foreignToken(permissions: string[]): string;
  close(): Promise<void>;
}

const b64url = (v: Buffer | string) => Buffer.from(v).toString('base64url');

function jwt(permissions: string[], key: KeyObject, kid: string): string {
  const head = b64url(JSON.stringify({ alg: 'RS256', typ: 'JWT', kid }));
  const now = Math.floor(Date.now() / 1000);
  const body = b64url(JSON.stringify({ sub: 'loopwright-test', permissions, iat: now, exp: now + 3600 }));
  return `${head}.${body}.${b64url(sign('sha256', Buffer.from(`${head}.${body}`), key))}`;
}

/** Starts a {@link JwtIssuer}. */
export async function startJwtIssuer(): Promise<JwtIssuer> {
  const kid = 'loopwright-test';
  const pair = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const other = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;
  const jwk = { ...pair.publicKey.export({ format: 'jwk' }), kid, alg: 'RS256', use: 'sig' };
  const server = createServer((_req, res) => {
    res.setHeader('Content-Type', 'application/json');
    res.end(JSON.stringify({ keys: [jwk] }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    keySource: `http://127.0.0.1:${(server.address() as AddressInfo).port}/jwks.json`,
    token: (permissions) => jwt(permissions, pair.privateKey, kid),
    foreignToken: (permissions) => jwt(permissions, other, kid),
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** What the server answered a worker call: `accepted` (a task, or an empty long poll), or the gRPC status name. */
export type CallOutcome = 'accepted' | string;

/** The gRPC status codes these calls meet (grpc.status). */
const STATUS: Record<number, string> = {
  3: 'INVALID_ARGUMENT',
  4: 'DEADLINE_EXCEEDED',
  5: 'NOT_FOUND',
  7: 'PERMISSION_DENIED',
  16: 'UNAUTHENTICATED',
};

function outcome(err: unknown): CallOutcome {
  const code = (err as { code?: number }).code;
  return code === undefined ? `error: ${String(err)}` : (STATUS[code] ?? `code ${code}`);
}

/**
 * Acting as a worker of `taskQueue` with `token` through the SDK's raw WorkflowService: polls the
 * workflow and the activity task queue (each long poll cut to a few seconds: the authorizer answers
 * before the poll waits), and completes an activity of `workflowId` by id with a result of its own.
 * Returns each call's outcome, and the workflow task a poll got, if any.
 */
export async function actAsWorker(
  address: string,
  token: string,
  namespace: string,
  taskQueue: string,
  workflowId: string,
): Promise<{
  workflowPoll: CallOutcome;
  activityPoll: CallOutcome;
  completeActivity: CallOutcome;
  gotTaskOf?: string;
}> {
  const connection = await Connection.connect({ address, apiKey: token, tls: false });
  try {
    const svc = connection.workflowService;
    const short = <T>(fn: () => Promise<T>) => connection.withDeadline(Date.now() + 4_000, fn);
    const call = async <T>(fn: () => Promise<T>): Promise<[CallOutcome, T | undefined]> => {
      try {
        return ['accepted', await short(fn)];
      } catch (err) {
        const o = outcome(err);
        // A long poll cut by our deadline got past the authorizer.
        return [o === 'DEADLINE_EXCEEDED' ? 'accepted' : o, undefined];
      }
    };
    const identity = 'attacker@loopwright-test';
    const [workflowPoll, task] = await call(() =>
      svc.pollWorkflowTaskQueue({ namespace, taskQueue: { name: taskQueue }, identity }),
    );
    const [activityPoll] = await call(() =>
      svc.pollActivityTaskQueue({ namespace, taskQueue: { name: taskQueue }, identity }),
    );
    const [completeActivity] = await call(() =>
      svc.respondActivityTaskCompletedById({ namespace, workflowId, activityId: '1', identity }),
    );
    const gotTaskOf = task?.workflowExecution?.workflowId ?? undefined;
    return { workflowPoll, activityPoll, completeActivity, ...(gotTaskOf ? { gotTaskOf } : {}) };
  } finally {
    await connection.close();
  }
}
