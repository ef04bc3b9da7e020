// graphile-worker's task list: one task per file, named after the job identifier (`<resource>__<action>`).
import type { TaskList } from 'graphile-worker';
import { DISPATCH_EVENT_TASK } from '../shared/events.ts';
import { dispatchEvent } from './events__dispatch.ts';

export const taskList: TaskList = {
  [DISPATCH_EVENT_TASK]: dispatchEvent,
};
