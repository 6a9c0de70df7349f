// Test support (not published): a storage that behaves as another one, with some of its methods replaced.

import type { SessionStorage } from "./session_storage.ts";

type Method = (...args: never[]) => unknown;

/**
 * `storage` with the methods named in `replace` swapped: each replacement
 * gets the original (bound to `storage`, whose private state stays its own)
 * and returns the method to use instead.
 */
export function withFaults(
  storage: SessionStorage,
  replace: { [K in keyof SessionStorage]?: (original: SessionStorage[K]) => SessionStorage[K] },
): SessionStorage {
  return new Proxy(storage, {
    get(target, key) {
      const value = Reflect.get(target, key, target);
      if (typeof value !== "function") return value;
      const bound = (value as Method).bind(target);
      const make = (replace as Record<string | symbol, ((original: Method) => Method) | undefined>)[key];
      return make === undefined ? bound : make(bound);
    },
  });
}

/** Writes (`create`, `append`) that take a while, as a disk's or a database's do. */
export function slowWrites(storage: SessionStorage, ms = 5): SessionStorage {
  const later = <A extends unknown[], R>(write: (...args: A) => Promise<R>) => (...args: A) =>
    new Promise((resolve) => setTimeout(resolve, ms)).then(() => write(...args));
  return withFaults(storage, { create: later, append: later });
}
