/**
 * Worker process entry point (`node dist/workers/main.js`, the docker-compose worker): the same
 * as `loopwright worker`. Reads TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, LOOPWRIGHT_TASK_QUEUE and
 * the model settings from the environment; SIGINT/SIGTERM shut it down after in-flight tasks.
 */
import { main } from '../client/cli';

main(['worker']).then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
