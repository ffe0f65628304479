// The official TypeScript SDK v2 client (@modelcontextprotocol/client, installed in tests/tools)
// driving a gateway in either era, over streamable HTTP or stdio; one JSON line out.
//
//   node ts_v2_client.mjs MODE CALLS http URL TOKEN
//   node ts_v2_client.mjs MODE CALLS stdio COMMAND ARG...
//
// MODE: "legacy" (initialize handshake) or a version to pin (2026-07-28: server/discover, no
// session). CALLS: a JSON list of [tool, arguments]. Prints {era, version, tools, results}, each
// result the call's text or {code, message} when it failed.
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const sdk = path.join(here, "..", "..", "tools", "node_modules", "@modelcontextprotocol", "client", "dist");
const { Client, StreamableHTTPClientTransport } = await import(path.join(sdk, "index.mjs"));

const [mode, callsJson, kind, ...rest] = process.argv.slice(2);
let transport;
if (kind === "http") {
  const [url, token] = rest;
  transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: token ? { Authorization: `Bearer ${token}` } : {} },
  });
} else {
  const { StdioClientTransport } = await import(path.join(sdk, "stdio.mjs"));
  transport = new StdioClientTransport({ command: rest[0], args: rest.slice(1), env: process.env, stderr: "ignore" });
}
const client = new Client(
  { name: "ts-v2-test", version: "1.0.0" },
  { versionNegotiation: { mode: mode === "legacy" ? "legacy" : { pin: mode } } },
);
await client.connect(transport);
const out = {
  era: client.getProtocolEra(),
  version: client.getNegotiatedProtocolVersion(),
  tools: (await client.listTools()).tools.map((t) => t.name),
  results: [],
};
for (const [name, args] of JSON.parse(callsJson)) {
  try {
    const result = await client.callTool({ name, arguments: args });
    out.results.push(result.content.map((c) => c.text ?? "").join("\n"));
  } catch (err) {
    out.results.push({ code: err.code, message: String(err.message) });
  }
}
console.log(JSON.stringify(out));
await client.close();
process.exit(0);
