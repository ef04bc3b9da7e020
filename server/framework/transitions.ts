// A state machine as data: for each state, the operations it allows and the state each leads to. The checks,
// the 409 messages and the OpenAPI descriptions of the operations are all derived from one table.
//
// Most moves lead to one state. A move whose end depends on what the operation did (a receipt that completes the
// order closes it, one that does not leaves it partially received) lists its outcomes, each but the last under a
// fact: the first whose fact holds once the operation applied is the state it leads to.
import { ConflictError } from '../../shared/errors.ts';

export interface Outcome<State extends string, Fact extends string> {
  to: State;
  /** Absent on the last outcome, which applies when no fact before it holds. */
  when?: Fact;
}

export type Move<State extends string, Fact extends string> = State | ReadonlyArray<Outcome<State, Fact>>;

export type TransitionTable<State extends string, Operation extends string, Fact extends string = never> =
  Record<State, Partial<Record<Operation, Move<State, Fact>>>>;

/** The move `operation` makes from `current`, or a 409 naming both (the record is left as it is). */
export function allowedMove<State extends string, Operation extends string, Fact extends string>(
  table: TransitionTable<State, Operation, Fact>,
  resource: string,
  current: State,
  operation: Operation,
): Move<State, Fact> {
  const move = table[current][operation];
  if (move === undefined) {
    throw new ConflictError(`Cannot ${operation} a ${resource} that is ${current}`, { status: current, operation });
  }
  return move;
}

/** Where a move ends, given the facts that hold once the operation applied. */
export function settle<State extends string, Fact extends string>(move: Move<State, Fact>, facts: Partial<Record<Fact, boolean>> = {}): State {
  if (typeof move === 'string') return move;
  const outcome = move.find((entry) => entry.when === undefined || facts[entry.when]);
  if (!outcome) throw new Error('settle: a move whose last outcome has a condition');
  return outcome.to;
}

function describeMove<State extends string, Fact extends string>(move: Move<State, Fact>, facts: Record<Fact, string>): string {
  if (typeof move === 'string') return `\`${move}\``;
  return move.map((outcome) => (outcome.when === undefined ? `else \`${outcome.to}\`` : `\`${outcome.to}\` ${facts[outcome.when]}`)).join(', ');
}

/**
 * "Allowed from `draft` (to `confirmed`) and `on_hold` (to `partially_received` once something was received, else
 * `confirmed`); any other status is a 409." `facts` says, for each fact, when it holds.
 */
export function describeOperation<State extends string, Operation extends string, Fact extends string = never>(
  table: TransitionTable<State, Operation, Fact>,
  operation: Operation,
  facts: Record<Fact, string> = {} as Record<Fact, string>,
): string {
  const moves = (Object.entries(table) as Array<[State, Partial<Record<Operation, Move<State, Fact>>>]>)
    .flatMap(([from, operations]) => {
      const move = operations[operation];
      return move === undefined ? [] : [`\`${from}\` (to ${describeMove(move, facts)})`];
    });
  if (moves.length === 0) return 'Not allowed from any status.';
  const list = moves.length === 1 ? moves[0] : `${moves.slice(0, -1).join(', ')} and ${moves.at(-1)}`;
  return `Allowed from ${list}; from any other status it is a 409 naming the current \`status\` and the \`operation\`.`;
}

/** The event each operation records: one kind, or one per state the operation can end in. */
export type TransitionEvents<State extends string, Operation extends string, Event extends string> =
  Partial<Record<Operation, Event | Partial<Record<State, Event>>>>;

/** The event `operation` records when it ends in `reached`, if it records one. */
export function eventOf<State extends string, Operation extends string, Event extends string>(
  events: TransitionEvents<State, Operation, Event>,
  operation: Operation,
  reached: State,
): Event | undefined {
  const event = events[operation];
  return (typeof event === 'object' ? event[reached] : event) as Event | undefined;
}
