/** An API call's failure: status, readable message, and a 422's items (no DOM: tests import it). */
export interface ErrorItem {
  loc?: (string | number)[];
  msg?: string;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    /** A 422's items, for forms that show each beside the field its `loc` points at. */
    readonly items: ErrorItem[] = [],
  ) {
    super(message);
  }
}
