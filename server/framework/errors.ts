// superstruct's failures as the problems a 400 names.
import type { Failure, StructError } from 'superstruct';
import { formatPath, type Problem } from '../../shared/errors.ts';

const TYPE_MESSAGES: Record<string, string> = {
  string: 'must be a string',
  number: 'must be a number',
  integer: 'must be an integer',
  boolean: 'must be true or false',
  date: 'must be an ISO-8601 timestamp',
  object: 'must be an object',
  type: 'must be an object',
  array: 'must be an array',
};

function describeFailure(failure: Failure): string {
  if (failure.type === 'never') return 'is not an allowed field';
  if (failure.value === undefined) return 'is required';
  if (failure.refinement) return failure.message;
  return TYPE_MESSAGES[failure.type] ?? failure.message;
}

/** Every failure of a StructError; `root` names the value itself when a failure has no path (`body`). */
export function problemsOf(error: StructError, root: string): Problem[] {
  return error.failures().map((failure) => ({
    path: formatPath(failure.path) || root,
    message: describeFailure(failure),
  }));
}
