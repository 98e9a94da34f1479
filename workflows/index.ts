/** Every workflow the Loopwright worker runs; this file is the entry of the workflow bundle. */
export { loopWorkflow, loopWorkflowV2 } from './loop/loop-workflow';
export { discoveryWorkflow } from './discovery/discovery-workflow';
export { harnessWorkflow } from './harness/harness-workflow';
export { improveWorkflow } from './improve/improve-workflow';
