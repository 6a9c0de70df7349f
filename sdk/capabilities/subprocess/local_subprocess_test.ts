// localSubprocess() against the subprocess contract: the assertions are the contract's
// (`_test_subprocess_contract.ts`), shared by every implementation of the seam.
import { localSubprocess } from "./local_subprocess.ts";
import { subprocessContract } from "./_test_subprocess_contract.ts";

subprocessContract({ name: "localSubprocess()", make: () => localSubprocess() });
