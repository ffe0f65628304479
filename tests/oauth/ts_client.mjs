// The official TypeScript SDK's client logging in to an OAuth-protected MCP endpoint.
// Usage: node ts_client.mjs URL TOOL ARGS_JSON. Prints {"authorize": URL} when it must log in and
// reads the redirect's query (code=...&state=...) from stdin, as a browser's redirect would bring
// it; then prints {"result": ...} of the tool call. Tokens and registration stay in memory.
import { createInterface } from "node:readline";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";

const [url, tool, args] = process.argv.slice(2);
const redirect = "http://127.0.0.1:9/callback";
const state = { tokens: undefined, client: undefined, verifier: undefined };
const provider = {
  get redirectUrl() { return redirect; },
  get clientMetadata() {
    return { client_name: "ts sdk test", redirect_uris: [redirect], grant_types: ["authorization_code", "refresh_token"],
             response_types: ["code"], token_endpoint_auth_method: "client_secret_post" };
  },
  clientInformation() { return state.client; },
  saveClientInformation(info) { state.client = info; },
  tokens() { return state.tokens; },
  saveTokens(tokens) { state.tokens = tokens; },
  redirectToAuthorization(authorizationUrl) { console.log(JSON.stringify({ authorize: authorizationUrl.toString() })); },
  saveCodeVerifier(verifier) { state.verifier = verifier; },
  codeVerifier() { return state.verifier; },
};
const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();

async function connect() {
  const client = new Client({ name: "ts-sdk-test", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(url), { authProvider: provider });
  try {
    await client.connect(transport);
    return client;
  } catch (err) {
    if (!(err instanceof UnauthorizedError)) throw err;
    const query = new URLSearchParams((await lines.next()).value);
    await transport.finishAuth(query.get("code"));
    const again = new Client({ name: "ts-sdk-test", version: "1.0.0" });
    await again.connect(new StreamableHTTPClientTransport(new URL(url), { authProvider: provider }));
    return again;
  }
}

const client = await connect();
const result = await client.callTool({ name: tool, arguments: JSON.parse(args) });
console.log(JSON.stringify({ result }));
await client.close();
process.exit(0);
