import type { TranscriptMessage } from '../../common/context';
import { BlobKindError } from './errors';
import type { BlobStore } from './store';

export type { ContentBlock, TextBlock, ToolResultBlock, ToolUseBlock, TranscriptMessage } from '../../common/context';

/**
 * One stored message and the ref of the node before it (null for the first message). A
 * transcript is a chain of nodes, named by the ref of its last node, its head: appending makes a
 * new head and never changes an old node, so two branches from one parent stay independent.
 */
export interface TranscriptNode {
  parent: string | null;
  message: TranscriptMessage;
}

/**
 * Stores `message` after `parent` and returns the new head ref. Idempotent: the same message
 * after the same parent gives the same ref, so a retried activity appends nothing twice.
 * Throws the store's not-found error when `parent` is not in the store, so a worker that
 * does not share the store fails here rather than on a later read.
 */
export async function appendMessage(
  store: BlobStore,
  parent: string | null,
  message: TranscriptMessage,
): Promise<string> {
  // get() rather than a hand-made error: the store's own message names its directory.
  if (parent !== null && !(await store.has(parent))) await store.get(parent);
  const node: TranscriptNode = { parent, message };
  return store.put(node);
}

/**
 * The messages of the transcript whose head is `head`, oldest first (none for a null head),
 * found by walking the parents. Each node is one store read, served from the store's cache
 * when recent. Throws when a node is missing or when a ref is not a transcript node.
 */
export async function loadTranscript(store: BlobStore, head: string | null): Promise<TranscriptMessage[]> {
  const messages: TranscriptMessage[] = [];
  for (let ref = head; ref !== null;) {
    const node = await store.get<unknown>(ref);
    if (!isNode(node)) throw new BlobKindError(ref, 'a transcript node { parent, message }', describe(node));
    messages.push(node.message);
    ref = node.parent;
  }
  return messages.reverse();
}

/** Stores a large text (a tool's full output) as its own blob and returns its ref. */
export async function storeText(store: BlobStore, text: string): Promise<string> {
  return store.put(text);
}

/** The text stored under `ref` by {@link storeText}; throws when that blob is not a string. */
export async function loadText(store: BlobStore, ref: string): Promise<string> {
  const value = await store.get<unknown>(ref);
  if (typeof value !== 'string') throw new BlobKindError(ref, 'a text', describe(value));
  return value;
}

function isNode(value: unknown): value is TranscriptNode {
  if (typeof value !== 'object' || value === null) return false;
  const { parent, message } = value as Partial<TranscriptNode>;
  return (parent === null || typeof parent === 'string') && typeof message === 'object' && message !== null;
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'another object' : `a ${typeof value}`;
}
