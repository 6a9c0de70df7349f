import { localSubprocess } from "./local_subprocess.ts";
import { subprocessContract } from "./_test_subprocess_contract.ts";

subprocessContract({ name: "localSubprocess()", make: () => localSubprocess() });
