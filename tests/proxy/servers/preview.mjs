// A real TypeScript-SDK MCP server (@modelcontextprotocol/sdk, the v1 line the npm servers use) whose
// one tool answers the first `n` UTF-16 units of a text, as a JavaScript preview cuts it: inside an
// emoji that leaves half of it, which JSON.stringify writes as a lone surrogate escape ("\ud83d").
//
// Usage: node preview.mjs stdio | node preview.mjs http PORT [json]
// (streamable HTTP, stateless; answers on an SSE stream, or as one JSON body with `json`).
import { createServer } from "node:http";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { z } from "zod";

function build() {
  const server = new McpServer({ name: "preview", version: "1.0.0" });
  server.registerTool(
    "preview",
    { description: "The first n characters of a text.", inputSchema: { text: z.string(), n: z.number() } },
    async ({ text, n }) => ({ content: [{ type: "text", text: text.slice(0, n) }] }),
  );
  return server;
}

const [mode, port, body] = process.argv.slice(2);
if (mode === "stdio") {
  await build().connect(new StdioServerTransport());
} else {
  createServer(async (req, res) => {
    if (req.method !== "POST") {
      res.writeHead(405).end();
      return;
    }
    const server = build();
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: body === "json" });
    res.on("close", () => { transport.close(); server.close(); });
    await server.connect(transport);
    await transport.handleRequest(req, res);
  }).listen(Number(port), "127.0.0.1");
}
