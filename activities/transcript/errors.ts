import { LoopwrightError } from '../../common/errors';
import { KeyMissingError } from '../../crypto/keyring';

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

/**
 * A blob file that is sealed but does not open: altered, truncated, moved under another blob's
 * name (the name is bound to the ciphertext), or in a format this version cannot read.
 */
export class BlobUnreadableError extends LoopwrightError {
  constructor(
    readonly ref: string,
    readonly file: string,
    reason: string,
  ) {
    super(`transcript blob ${ref} is unreadable: ${file}: ${reason}; delete the file and retry the step that wrote it`);
  }
}

/**
 * A sealed blob whose key this process's ring lacks (lost, rotated out, or no ring configured):
 * a {@link KeyMissingError} that also names the blob and its file.
 */
export class BlobKeyMissingError extends KeyMissingError {
  constructor(
    readonly ref: string,
    readonly file: string,
    cause: KeyMissingError,
  ) {
    super(cause.keyId, '');
    this.name = new.target.name;
    this.message = `transcript blob ${ref} (${file}) cannot be read: ${cause.message}`;
  }
}
