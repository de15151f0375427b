// An MCP server written with the TypeScript SDK 1.x (`@modelcontextprotocol/sdk` McpServer, the
// interop kit's pinned install), for the conformance panel: `node ts_sdk_v1_panel_server.mjs`
// serves stateful Streamable HTTP on 127.0.0.1 (an ephemeral port, printed as `PORT <n>` once
// listening), a session per initialize, as the SDK's own example does. One read-only tool.
import http from "node:http";
import { randomUUID } from "node:crypto";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { z } from "zod";

function build() {
  const server = new McpServer({ name: "conformance-panel-ts-sdk-v1", version: "0.0.1" });
  server.registerTool("lookup", {
    description: "Look up a payment by reference.",
    inputSchema: { reference: z.string() },
    annotations: { readOnlyHint: true },
  }, async ({ reference }) => ({ content: [{ type: "text", text: `payment ${reference}` }] }));
  return server;
}

const sessions = new Map();
const httpServer = http.createServer(async (req, res) => {
  const id = req.headers["mcp-session-id"];
  if (typeof id === "string") {
    const known = sessions.get(id);
    if (known === undefined) {
      res.writeHead(404, { "content-type": "application/json" });
      res.end(JSON.stringify({ jsonrpc: "2.0", id: null,
                               error: { code: -32001, message: "Session not found" } }));
      return;
    }
    await known.handleRequest(req, res);
    return;
  }
  const transport = new StreamableHTTPServerTransport({
    sessionIdGenerator: () => randomUUID(),
    onsessioninitialized: (sid) => { sessions.set(sid, transport); },
  });
  transport.onclose = () => { if (transport.sessionId) sessions.delete(transport.sessionId); };
  await build().connect(transport);
  await transport.handleRequest(req, res);
});
httpServer.listen(0, "127.0.0.1", () => {
  process.stdout.write(`PORT ${httpServer.address().port}\n`);
});
