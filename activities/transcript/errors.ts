import { LoopwrightError } from '../../common/errors';

/** A string passed as a blob ref that is not `sha256:<64 lowercase hex digits>`: a caller's bug. */
export class BlobRefError extends LoopwrightError {
  constructor(readonly ref: string) {
    super(`not a transcript blob ref: ${JSON.stringify(ref)} (expected sha256:<64 lowercase hex digits>)`);
  }
}

/**
 * A ref the store does not hold. Refs come from `put`, so the usual cause is a worker whose
 * LOOPWRIGHT_TRANSCRIPTS points at another directory than the worker that wrote the blob.
 */
export class BlobNotFoundError extends LoopwrightError {
  constructor(
    readonly ref: string,
    readonly dir: string,
  ) {
    super(`transcript blob ${ref} is not in ${dir}: is LOOPWRIGHT_TRANSCRIPTS shared by all workers?`);
  }
}

/** A blob file whose content no longer hashes to its ref (a torn write, a disk fault, an edit). */
export class BlobCorruptError extends LoopwrightError {
  constructor(
    readonly ref: string,
    readonly file: string,
    readonly actual: string,
  ) {
    super(
      `transcript blob ${ref} is corrupt: ${file} hashes to ${actual}; ` +
        'delete the file and retry the step that wrote it',
    );
  }
}

/** A blob of the wrong kind for its use, such as a stored text passed as a transcript head. */
export class BlobKindError extends LoopwrightError {
  constructor(
    readonly ref: string,
    readonly expected: string,
    readonly found: string,
  ) {
    super(`transcript blob ${ref} holds ${found}, not ${expected}: was a ref of one kind passed as another?`);
  }
}
