// Test support (not published): run a test body as though the host were Windows, where an environment variable is
// one variable in any case.

import process from "node:process";

/**
 * Run `fn` with `process.platform` reading "win32" and the variables of `env` set in the host's environment; the
 * platform and the variables' earlier values are put back afterwards, whatever happens.
 */
export async function asWindowsHost<T>(env: Readonly<Record<string, string>>, fn: () => Promise<T>): Promise<T> {
  const platform = Object.getOwnPropertyDescriptor(process, "platform")!;
  const before = Object.keys(env).map((name) => [name, process.env[name]] as const);
  Object.assign(process.env, env);
  Object.defineProperty(process, "platform", { value: "win32", configurable: true });
  try {
    return await fn();
  } finally {
    Object.defineProperty(process, "platform", platform);
    for (const [name, value] of before) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  }
}
