// Child process of the subagent tests (not published): resumes a persisted
// parent and one of its children from a storage directory in a new process,
// runs a turn on each, and prints what it found as one JSON line.

import { checkInvariants, childSessions, fileStorage } from "../../mod.ts";
import { scriptedAdapter, textResponse } from "../../testing/mod.ts";
import { scenarioHarness } from "./_test_scenario.ts";

const dir = process.argv[process.argv.length - 1];
const model = scriptedAdapter((request) =>
  textResponse(request.sessionId === "parent" ? "Parent again" : `Child ${request.sessionId} again`)
);
const harness = await scenarioHarness(model, { storage: fileStorage(dir), idPrefix: "resumed" });
const parent = await harness.resumeAgent("parent");
const children = harness.ctx.service("sessionProjections").stateOf(parent.session, childSessions);
const child = await harness.resumeAgent(children[0].session);
const parentRun = await parent.run("Anything else?");
const childRun = await child.run("Go on");
const out = {
  children: children.map((c) => c.session),
  childParent: child.session.header.parentSession,
  childOrigin: child.session.header.origin,
  parentText: parentRun.text,
  childText: childRun.text,
  childSystem: model.requests.find((r) => r.sessionId === child.id)?.system,
  violations: [...checkInvariants(parent.session.events), ...checkInvariants(child.session.events)],
};
await harness.dispose();
console.log(`RESULT ${JSON.stringify(out)}`);
