/** Every workflow the Loopwright worker runs; this file is the entry of the workflow bundle. */
export { loopWorkflow } from './loop-workflow';
export { discoveryWorkflow } from './discovery-workflow';
export { harnessWorkflow } from './harness-workflow';
export { improveWorkflow } from './improve-workflow';
