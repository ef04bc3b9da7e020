// A state machine as data: for each state, the operations it allows and the state each leads to. The checks,
// the 409 messages and the OpenAPI descriptions of the operations are all derived from one table.
import { ConflictError } from '../../shared/errors.ts';

export type TransitionTable<State extends string, Operation extends string> = Record<State, Partial<Record<Operation, State>>>;

/** The state `operation` leads to from `current`, or a 409 naming both (the record is left as it is). */
export function nextState<State extends string, Operation extends string>(
  table: TransitionTable<State, Operation>,
  resource: string,
  current: State,
  operation: Operation,
): State {
  const next = table[current][operation];
  if (next === undefined) {
    throw new ConflictError(`Cannot ${operation} a ${resource} that is ${current}`, { status: current, operation });
  }
  return next;
}

/** "Allowed from `draft` (to `confirmed`) and `on_hold` (to `confirmed`); any other status is a 409." */
export function describeOperation<State extends string, Operation extends string>(
  table: TransitionTable<State, Operation>,
  operation: Operation,
): string {
  const moves = (Object.entries(table) as Array<[State, Partial<Record<Operation, State>>]>)
    .filter(([, operations]) => operations[operation] !== undefined)
    .map(([from, operations]) => `\`${from}\` (to \`${operations[operation]}\`)`);
  if (moves.length === 0) return 'Not allowed from any status.';
  const list = moves.length === 1 ? moves[0] : `${moves.slice(0, -1).join(', ')} and ${moves.at(-1)}`;
  return `Allowed from ${list}; from any other status it is a 409 naming the current \`status\` and the \`operation\`.`;
}
