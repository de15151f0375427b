// Interop driver for @modelcontextprotocol/sdk 1.x (the v1 TypeScript SDK): Client over
// StreamableHTTPClientTransport or StdioClientTransport. v1 speaks only the legacy handshake era.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport, getDefaultEnvironment } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';

import { OP_TIMEOUT_MS, detailOf, installedVersion, runDriver, transportOf } from './common.mjs';

const PACKAGE = '@modelcontextprotocol/sdk';
const REQUEST = { timeout: OP_TIMEOUT_MS };

// v1 raises McpError for the server's JSON-RPC errors and also for two conditions of its own (no
// answer in time, connection closed): those two are failures, not answers.
const LOCAL_CODES = new Set([ErrorCode.RequestTimeout, ErrorCode.ConnectionClosed]);

const SDK_TRANSPORTS = {
  Http: StreamableHTTPClientTransport, Stdio: StdioClientTransport, environment: getDefaultEnvironment,
};

function classify(err) {
  if (err instanceof McpError && !LOCAL_CODES.has(err.code)) {
    return { outcome: 'error', code: err.code, data: err.data ?? null };
  }
  // StreamableHTTPError (an HTTP status, the JSON-RPC body left in its message), TypeError from
  // fetch, the local McpError codes: the client did not hand back a JSON-RPC error.
  return { outcome: 'failure', detail: detailOf(err) };
}

async function connect(args) {
  const transport = transportOf(args, SDK_TRANSPORTS);
  // The client tells the transport the negotiated version after initialize; v1's Client keeps no
  // getter for it, so the driver listens on that call (HTTP keeps its own copy as well).
  let era = null;
  const ownSetter = transport.setProtocolVersion?.bind(transport);
  transport.setProtocolVersion = (version) => {
    era = version;
    ownSetter?.(version);
  };
  const client = new Client({ name: 'toolkeeper-interop', version: '0.0.0' });
  await client.connect(transport, REQUEST);
  return {
    list: () => client.listTools(undefined, REQUEST),
    call: (op) =>
      client.callTool(
        { name: op.name, arguments: op.arguments, ...(op.meta ? { _meta: op.meta } : {}) },
        undefined,
        REQUEST,
      ),
    ping: () => client.ping(REQUEST),
    era: () => era,
    close: () => client.close(),
  };
}

await runDriver({
  client: `${PACKAGE} ${installedVersion(PACKAGE)}`,
  modes: ['legacy'],
  connect,
  classify,
});
