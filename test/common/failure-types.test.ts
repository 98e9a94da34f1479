import { ApplicationFailure } from '@temporalio/common';
import { ConfigError, InputError, UsageError } from '../../common/errors';
import { FailureType, nonRetryableFailure } from '../../common/failure-types';
import { MODEL_NON_RETRYABLE, MODEL_RETRYABLE } from '../../activities/model-errors';

describe('failure types', () => {
  it('names each LoopwrightError that activities pass on by its class name', () => {
    expect([FailureType.Input, FailureType.Usage, FailureType.Config]).toEqual([
      InputError.name,
      UsageError.name,
      ConfigError.name,
    ]);
  });

  it('keeps the names recorded histories carry (a rename would change what replayed runs match)', () => {
    expect(FailureType).toEqual({
      Workspace: 'WorkspaceError',
      Discovery: 'DiscoveryError',
      SandboxUnavailable: 'SandboxUnavailable',
      Trust: 'TrustError',
      Judge: 'JudgeError',
      Effect: 'EffectError',
      Report: 'ReportError',
      Config: 'ConfigError',
      Input: 'InputError',
      Usage: 'UsageError',
      ModelRetryable: 'ModelRetryableError',
      ModelRequest: 'ModelRequestError',
    });
  });

  it('gives the model activity its two types from the same list', () => {
    expect([MODEL_RETRYABLE, MODEL_NON_RETRYABLE]).toEqual([FailureType.ModelRetryable, FailureType.ModelRequest]);
  });

  it('builds a non-retryable failure of the type with the message', () => {
    const failure = nonRetryableFailure(FailureType.Workspace, 'base abc is not a commit');
    expect(failure).toBeInstanceOf(ApplicationFailure);
    expect([failure.type, failure.nonRetryable, failure.message]).toEqual([
      'WorkspaceError',
      true,
      'base abc is not a commit',
    ]);
  });
});
