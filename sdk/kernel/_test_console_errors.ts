// Test support (not published): what console.error was given while a test body ran, recorded instead of printed.

/**
 * Run `body` with console.error recording its arguments (one array a call) instead of printing them, and put the
 * console back afterwards, whatever happens; `body` may read the records as they come.
 *
 * @returns The records, once `body` has settled.
 */
export async function capturingErrors(body: (printed: unknown[][]) => Promise<void>): Promise<unknown[][]> {
  const error = console.error;
  const printed: unknown[][] = [];
  console.error = (...args: unknown[]) => void printed.push(args);
  try {
    await body(printed);
  } finally {
    console.error = error;
  }
  return printed;
}
