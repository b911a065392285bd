/** An answer of the API that is not a success, as the console's requests throw it. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    /** A 422's items, each with the `loc` of the field it is about (forms show them there). */
    readonly items: ErrorItem[] = [],
  ) {
    super(message);
  }
}

export interface ErrorItem {
  loc?: (string | number)[];
  msg?: string;
}
