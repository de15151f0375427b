// An MCP server written with the TypeScript SDK v2 (`@modelcontextprotocol/server`, installed by
// the peer fixture's `ts_server_v2` recipe), for the conformance panel. Both eras come from one
// factory, as the SDK's documentation wires it:
//   `node ts_sdk_v2_panel_server.mjs http`  serves `createMcpHandler` (the modern era, and the
//     SDK's stateless legacy fallback) on 127.0.0.1 through `@modelcontextprotocol/node`'s
//     `toNodeHandler`, behind the SDK's localhost Host and Origin checks; it prints `PORT <n>`
//     once listening on an ephemeral port;
//   `node ts_sdk_v2_panel_server.mjs stdio` serves `serveStdio` (the era chosen by the opening
//     exchange, legacy served).
// Two tools: a read-only `lookup(reference)` and `add(a, b)`.
import http from "node:http";
import {
  McpServer, createMcpHandler, hostHeaderValidationResponse, localhostAllowedHostnames,
  localhostAllowedOrigins, originValidationResponse,
} from "@modelcontextprotocol/server";
import { serveStdio } from "@modelcontextprotocol/server/stdio";
import { toNodeHandler } from "@modelcontextprotocol/node";
import { z } from "zod";

function build() {
  const server = new McpServer({ name: "conformance-panel-ts-sdk-v2", version: "0.0.1" },
                               { capabilities: { tools: {} } });
  server.registerTool("lookup", {
    description: "Look up a payment by reference.",
    inputSchema: z.object({ reference: z.string() }),
    annotations: { readOnlyHint: true },
  }, async ({ reference }) => ({ content: [{ type: "text", text: `payment ${reference}` }] }));
  server.registerTool("add", {
    description: "Add two numbers.",
    inputSchema: z.object({ a: z.number(), b: z.number() }),
  }, async ({ a, b }) => ({ content: [{ type: "text", text: String(a + b) }] }));
  return server;
}

if (process.argv[2] === "stdio") {
  serveStdio(build);
} else {
  const handler = createMcpHandler(build);
  const guarded = {
    fetch: async (request, options) =>
      hostHeaderValidationResponse(request, localhostAllowedHostnames())
        ?? originValidationResponse(request, localhostAllowedOrigins())
        ?? handler.fetch(request, options),
  };
  const node = toNodeHandler(guarded);
  const httpServer = http.createServer((req, res) => { void node(req, res); });
  httpServer.listen(0, "127.0.0.1", () => {
    process.stdout.write(`PORT ${httpServer.address().port}\n`);
  });
}
