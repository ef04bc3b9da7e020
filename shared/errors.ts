// The errors a request can end in that are the caller's to fix or to know: a status and a body saying why.
// Thrown anywhere (handlers, the data operations of db/); server/middleware/errors.ts answers them.

export interface Problem {
  path: string;
  message: string;
}

export class ApiError extends Error {
  readonly status: number;
  readonly details: Record<string, unknown>;

  constructor(status: number, message: string, details: Record<string, unknown> = {}) {
    super(message);
    this.status = status;
    this.details = details;
  }

  toBody(): Record<string, unknown> {
    return { error: this.message, ...this.details };
  }
}

/** Problems a 400 names at most; the rest are counted. A hostile body can have a million. */
export const MAX_PROBLEMS = 100;

/**
 * A write that checked itself that the records it names belong to the account, and found one that does not: the
 * route looks them up (its `resolve`) to name each in a 400.
 */
export class UnresolvedReferences extends ApiError {
  constructor() {
    // What answers when the lookup then finds them all (they changed in between).
    super(409, 'A record this request names changed while it ran; retry it');
  }
}

export class ValidationError extends ApiError {
  readonly errors: Problem[];

  constructor(errors: Problem[]) {
    super(400, 'Validation failed');
    this.errors = errors;
  }

  static of(path: string, message: string): ValidationError {
    return new ValidationError([{ path, message }]);
  }

  override toBody(): Record<string, unknown> {
    const omitted = this.errors.length - MAX_PROBLEMS;
    return omitted > 0
      ? { error: this.message, errors: this.errors.slice(0, MAX_PROBLEMS), omittedErrors: omitted }
      : { error: this.message, errors: this.errors };
  }
}

export class NotFoundError extends ApiError {
  constructor(resource: string) {
    super(404, `${resource} not found`);
  }
}

/** A state conflict: the request is well formed but cannot apply to the data as it stands. */
export class ConflictError extends ApiError {
  constructor(message: string, details: Record<string, unknown> = {}) {
    super(409, message, details);
  }
}

/** `lineItems[0].quantity`, as an integrator reads it. */
export function formatPath(path: readonly unknown[]): string {
  return path.reduce<string>((out, key) =>
    typeof key === 'number' ? `${out}[${key}]` : out ? `${out}.${String(key)}` : String(key), '');
}
