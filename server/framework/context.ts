import type { ParameterizedContext } from 'koa';
import type { Logger } from '../../shared/logger.ts';
import type { ApiKeyIdentity } from '../../db/accounts.ts';

export interface AppState {
  requestId: string;
  log: Logger;
  /** Set by the auth middleware once the X-API-Key header named a live key. */
  auth?: ApiKeyIdentity;
  /** The body a replay of this request answers, when it is not the body itself (see Reply.replay). */
  replayBody?: unknown;
}

export type AppContext = ParameterizedContext<AppState>;
