// graphile-worker's task list: one task per file, named after the job identifier.
import type { TaskList } from 'graphile-worker';

export const taskList: TaskList = {};
