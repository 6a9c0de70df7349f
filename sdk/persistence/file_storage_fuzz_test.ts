// Damaged plain (JSON lines) session files, generated: see _test_damaged_files.ts.

import { damagedFilesSuite } from "./_test_damaged_files.ts";

damagedFilesSuite("none");
