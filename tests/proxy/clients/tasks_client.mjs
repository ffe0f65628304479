// A 2025-11-25 tasks client: the TypeScript SDK's experimental tasks API over streamable HTTP.
// node tasks_client.mjs URL TOKEN OP [ARG...], one JSON line out:
//   run TOOL ARGS_JSON   callToolStream (the tool listed first, so the SDK knows it runs as a task):
//                        {"created": id, "statuses": [...], "result": {...}} or {"error": {...}}
//   start TOOL ARGS_JSON the task-augmented tools/call only: {"task": {...}} or {"error": {...}}
//   get ID | result ID | cancel ID | list   the method's result, or {"error": {code, message}}
//   capabilities         the server's initialize capabilities
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CallToolResultSchema, CreateTaskResultSchema } from "@modelcontextprotocol/sdk/types.js";

const [url, token, op, ...rest] = process.argv.slice(2);
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
});
const client = new Client({ name: "tasks-test", version: "1.0.0" }, { capabilities: {} });
const out = (value) => process.stdout.write(JSON.stringify(value) + "\n");
const failed = (e) => ({ error: { code: e?.code ?? null, message: String(e?.message ?? e) } });
const tasks = () => client.experimental.tasks;

try {
  await client.connect(transport);
  if (op === "capabilities") {
    out(client.getServerCapabilities() ?? {});
  } else if (op === "run") {
    await client.listTools();
    const seen = { statuses: [] };
    for await (const m of tasks().callToolStream({ name: rest[0], arguments: JSON.parse(rest[1]) }, CallToolResultSchema, { task: { ttl: 60000 } })) {
      if (m.type === "taskCreated") seen.created = m.task.taskId;
      else if (m.type === "taskStatus") seen.statuses.push(m.task.status);
      else if (m.type === "result") seen.result = m.result;
      else if (m.type === "error") seen.error = failed(m.error).error;
    }
    out(seen);
  } else if (op === "start") {
    try {
      out(await client.request({ method: "tools/call", params: { name: rest[0], arguments: JSON.parse(rest[1]), task: { ttl: 60000 } } }, CreateTaskResultSchema));
    } catch (e) { out(failed(e)); }
  } else {
    try {
      if (op === "get") out(await tasks().getTask(rest[0]));
      else if (op === "result") out(await tasks().getTaskResult(rest[0], CallToolResultSchema));
      else if (op === "cancel") out(await tasks().cancelTask(rest[0]));
      else if (op === "list") out(await tasks().listTasks());
      else out({ error: { code: null, message: `unknown op ${op}` } });
    } catch (e) { out(failed(e)); }
  }
} catch (e) {
  out(failed(e));
} finally {
  await client.close().catch(() => {});
}
