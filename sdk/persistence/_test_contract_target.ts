// A storage backend as the contract suites (_test_storage_contract.ts, _test_delete_tree.ts) run it.

import type { SessionStorage } from "./session_storage.ts";

export interface ContractTarget {
  readonly name: string;
  /** A fresh, empty storage; `after` cleans up. */
  make(): Promise<{ storage: SessionStorage; after(): Promise<void> }>;
}

/** A test body run on a fresh storage of `target`, cleaned up after it whatever happens. */
export function onFreshStorage(
  target: ContractTarget,
  fn: (storage: SessionStorage) => Promise<void>,
): () => Promise<void> {
  return async () => {
    const { storage, after } = await target.make();
    try {
      await fn(storage);
    } finally {
      await after();
    }
  };
}
