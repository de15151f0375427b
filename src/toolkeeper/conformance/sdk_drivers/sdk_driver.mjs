// The SDK diff's driver for the official TypeScript SDK's client (@modelcontextprotocol/client
// 2.x): one request through the SDK's own API, and one JSON line on stdout with what it handed
// back. The package is loaded from the node_modules directory given on the command line (the
// interop cache's pinned install), by its package.json "import" export.
//
//   node sdk_driver.mjs --node-modules DIR --url URL --mode legacy|2026-07-28
//                       --method tools/call|tools/list [--tool NAME] [--arguments JSON]
//                       [--manual-input]
//
// --manual-input: the answer is input_required; take the SDK's manual multi-round-trip mode
// (inputRequired.autoFulfill false, allowInputRequired on the call), which hands the result to
// the application, instead of auto-fulfilling (which needs an elicitation handler to run at all).
//
// Output: {"sdk", "era", "outcome": "value"|"exception", "value"|"exception"}; exit 0 whenever
// it printed.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { pathToFileURL } from 'node:url';

const PACKAGE = '@modelcontextprotocol/client';
const TIMEOUT_MS = 20_000;

const { values: args } = parseArgs({
  options: {
    'node-modules': { type: 'string' }, url: { type: 'string' }, mode: { type: 'string' },
    method: { type: 'string' }, tool: { type: 'string', default: '' },
    arguments: { type: 'string', default: '{}' }, 'manual-input': { type: 'boolean', default: false },
  },
});

const root = join(args['node-modules'], PACKAGE);
const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const sdk = await import(pathToFileURL(join(root, manifest.exports['.'].import.default)).href);
const negotiation = args.mode === 'legacy' ? 'legacy' : { pin: args.mode };

function exceptionOf(err) {
  const message = String(err?.message ?? err).split(/\s+/).join(' ').slice(0, 300);
  return { type: err?.constructor?.name ?? typeof err, code: Number.isInteger(err?.code) ? err.code : null, message };
}

let out;
let era = null;
const client = new sdk.Client({ name: 'toolkeeper-sdk-diff', version: '0.0.0' },
  { versionNegotiation: { mode: negotiation, probe: { timeoutMs: TIMEOUT_MS } },
    ...(args['manual-input'] ? { inputRequired: { autoFulfill: false } } : {}) });
const callOptions = { timeout: TIMEOUT_MS, ...(args['manual-input'] ? { allowInputRequired: true } : {}) };
const timer = setTimeout(() => {
  process.stdout.write(JSON.stringify({ sdk: `${PACKAGE} ${manifest.version}`, era, outcome: 'exception',
    exception: { type: 'Timeout', code: null, message: 'the driver ran out of time' } }) + '\n');
  process.exit(0);
}, TIMEOUT_MS + 5_000);
try {
  await client.connect(new sdk.StreamableHTTPClientTransport(new URL(args.url)), { timeout: TIMEOUT_MS });
  era = client.getNegotiatedProtocolVersion?.() ?? null;
  const value = args.method === 'tools/list'
    ? await client.listTools(undefined, { timeout: TIMEOUT_MS })
    : await client.callTool({ name: args.tool, arguments: JSON.parse(args.arguments) }, callOptions);
  out = { outcome: 'value', value: JSON.parse(JSON.stringify(value)) };
} catch (err) {
  out = { outcome: 'exception', exception: exceptionOf(err) };
}
clearTimeout(timer);
try { await client.close(); } catch { /* closing is not the evidence */ }
process.stdout.write(JSON.stringify({ sdk: `${PACKAGE} ${manifest.version}`, era, ...out }) + '\n');
process.exit(0);
