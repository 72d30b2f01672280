// Drives Signoff's AG-UI endpoint with the real @ag-ui/client HttpAgent, as an app would.
// Usage: node client.mjs <url> <token> <threadId> <plan as JSON>
// The plan is a list of steps: {"prompt": "..."}, {"resume": [...]}, or {"answer": {status,
// payload}} (the same answer to every interrupt the thread waits on); for each step, one
// JSON line on stdout: how the run finished (outcome, result) or the error it ended with.
import { HttpAgent } from "@ag-ui/client";

const [url, token, threadId, planText] = process.argv.slice(2);
const agent = new HttpAgent({ url, threadId, headers: { Authorization: `Bearer ${token}` } });

for (const [index, step] of JSON.parse(planText).entries()) {
  const seen = { step: index, events: [], finished: null, error: null };
  if (step.prompt) agent.addMessage({ id: `user-${index}`, role: "user", content: step.prompt });
  const resume = step.resume
    ?? (step.answer && agent.pendingInterrupts.map((i) => ({ interruptId: i.id, ...step.answer })));
  try {
    await agent.runAgent(resume ? { resume } : {}, {
      onEvent: ({ event }) => { seen.events.push(event.type); },
      onRunFinishedEvent: ({ event }) => { seen.finished = { outcome: event.outcome ?? null, result: event.result ?? null }; },
      onRunErrorEvent: ({ event }) => { seen.error = { message: event.message, code: event.code ?? null }; },
    });
  } catch (error) {
    seen.error = seen.error ?? { message: String(error && error.message || error), code: "client" };
  }
  seen.pending = agent.pendingInterrupts.map((i) => i.id);
  seen.assistant = agent.messages.filter((m) => m.role === "assistant")
    .map((m) => ({ id: m.id, toolCalls: (m.toolCalls || []).map((t) => t.id) }));
  console.log(JSON.stringify(seen));
}
