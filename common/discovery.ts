/** One work item found by a discovery source: a failing test, by its stable key. */
export interface DiscoveredItem {
  key: string;
  name: string;
}

/**
 * The input of `discoveryWorkflow`: the loop whose runs it starts and the source's settings.
 * `repo` is an absolute path on the workers; `fanOut` caps how many child starts are in flight.
 */
export interface DiscoveryInput {
  loop: string;
  repo: string;
  testCommand: string;
  reportDir?: string;
  fanOut?: number;
  /** Verification debt: start no run while this many of the loop's runs wait for a human. */
  maxPendingReviews?: number;
}

/** An item that got no new run, and why (`already running`, `already done`, verification debt). */
export interface SkippedItem {
  key: string;
  workflowId: string;
  reason: string;
}

/** What a discovery run found and did; also its live `state` query. */
export interface DiscoveryResult {
  phase: 'listing' | 'starting' | 'done';
  items: DiscoveredItem[];
  /** Workflow ids of the runs it started. */
  started: string[];
  skipped: SkippedItem[];
}
