// Interop driver for @modelcontextprotocol/client 2.x (the v2 TypeScript SDK's client package):
// Client over StreamableHTTPClientTransport or its StdioClientTransport. The era is chosen with
// ClientOptions.versionNegotiation.mode: 'legacy' (its default: the plain initialize handshake),
// 'auto' (probe server/discover, fall back to initialize) or { pin: '2026-07-28' } (modern only).
import { Client, ProtocolError, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport, getDefaultEnvironment } from '@modelcontextprotocol/client/stdio';

import { OP_TIMEOUT_MS, detailOf, installedVersion, runDriver, transportOf } from './common.mjs';

const PACKAGE = '@modelcontextprotocol/client';
const REQUEST = { timeout: OP_TIMEOUT_MS };

/** The kit's mode names -> versionNegotiation.mode. */
const NEGOTIATION = {
  legacy: 'legacy',
  auto: 'auto',
  '2026-07-28': { pin: '2026-07-28' },
};

// v2 separates the two surfaces by type: ProtocolError is a JSON-RPC error the peer sent (code and
// data as received); SdkError and its SdkHttpError are the client's own (timeouts, closed
// connections, HTTP statuses), so they are failures.
const SDK_TRANSPORTS = {
  Http: StreamableHTTPClientTransport, Stdio: StdioClientTransport, environment: getDefaultEnvironment,
};

function classify(err) {
  if (err instanceof ProtocolError) return { outcome: 'error', code: err.code, data: err.data ?? null };
  return { outcome: 'failure', detail: detailOf(err) };
}

async function connect(args) {
  const client = new Client(
    { name: 'toolkeeper-interop', version: '0.0.0' },
    { versionNegotiation: { mode: NEGOTIATION[args.mode], probe: { timeoutMs: OP_TIMEOUT_MS } } },
  );
  await client.connect(transportOf(args, SDK_TRANSPORTS), REQUEST);
  return {
    list: () => client.listTools(undefined, REQUEST),
    call: (op) =>
      client.callTool({ name: op.name, arguments: op.arguments, ...(op.meta ? { _meta: op.meta } : {}) }, REQUEST),
    ping: () => client.ping(REQUEST),
    era: () => client.getNegotiatedProtocolVersion() ?? null,
    close: () => client.close(),
  };
}

await runDriver({
  client: `${PACKAGE} ${installedVersion(PACKAGE)}`,
  modes: Object.keys(NEGOTIATION),
  connect,
  classify,
});
