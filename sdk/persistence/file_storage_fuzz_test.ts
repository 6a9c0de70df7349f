// Damaged plain (JSON lines) session files, generated: the property is in _test_damaged_files.ts.

import assert from "node:assert/strict";
import { damagedFilesSuite } from "./_test_damaged_files.ts";

damagedFilesSuite("none", (outcomes) => {
  // Each slice of cases meets both ends: damage that is repaired (read) and damage refused as corrupt.
  assert.ok((outcomes.read ?? 0) > 0 && (outcomes.SESSION_CORRUPT ?? 0) > 0, JSON.stringify(outcomes));
});
