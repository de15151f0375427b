// Interop driver for the MCP Inspector's CLI (`mcp-inspector --cli`, @modelcontextprotocol/inspector
// 2.x). The CLI runs one method per process, so each op is one CLI run (its own connection and
// session) with `--format json`, and the run's stdout, stderr envelope and exit code become the op
// record. `--protocol-era legacy|auto|modern` chooses the era, over HTTP and stdio alike.
//
// What the CLI can and cannot show (see node_clients.py for the ops left out of its column):
// - exit 0, or 5 (`tool_is_error`) with the result still on stdout: a result.
// - a JSON-RPC error the server sent reaches stderr only as `{"error": {"code": "error", "message"}}`
//   (the CLI's catch-all): the JSON-RPC code and data are not exposed, so the op is an "error" with
//   code and data null. An HTTP status on the envelope (`status`) is a transport failure.
//   The catch-all also carries the client library's own errors (SdkError: a closed connection, a
//   timeout, a result it rejects), which would then pass for a server's answer whose code is
//   hidden; their messages (LOCAL_ERRORS) make those failures.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { OP_TIMEOUT_MS, installedVersion, runDriver, serverEnv } from './common.mjs';

const PACKAGE = '@modelcontextprotocol/inspector';
const CLI_TIMEOUT_MS = OP_TIMEOUT_MS - 500; // the CLI is killed before the op's own bound fires

// The messages of the SdkErrors that @modelcontextprotocol/core and /client raise themselves (the
// CLI's catch-all envelope keeps only the message, not the class).
const LOCAL_ERRORS = [
  /^Not connected/,
  /^Transport is not connected/,
  /^Connection closed/,
  /^Request timed out/,
  /^Maximum total timeout exceeded/,
  /^Version negotiation/,
  /^Cannot run the initialize handshake/,
  /^Invalid (result|input request)/,
  /^Unsupported result type/,
  /^Unexpected content type/,
  /^(Server|Client) does not support/,
  /is not supported by the negotiated protocol version/,
];

/** The kit's mode names -> --protocol-era. */
const ERAS = { legacy: 'legacy', auto: 'auto', '2026-07-28': 'modern' };

function launcherPath() {
  const root = new URL(`../node_modules/${PACKAGE}/`, import.meta.url);
  const manifest = JSON.parse(readFileSync(new URL('package.json', root), 'utf8'));
  return fileURLToPath(new URL(manifest.bin['mcp-inspector'], root));
}

function record(outcome, fields) {
  return { record: { outcome, ...fields } };
}

function lastJsonLine(text) {
  const lines = text.trim().split('\n').reverse();
  for (const line of lines) {
    try {
      return JSON.parse(line);
    } catch {
      // a status or log line; keep looking
    }
  }
  return null;
}

/** One CLI run's exit code, stdout and stderr -> the op record. */
function judge(kind, run) {
  const out = run.stdout.trim() ? lastJsonLine(run.stdout) : null;
  if (out && typeof out.result === 'object' && out.result !== null && (run.code === 0 || run.code === 5)) {
    const result = out.result;
    if (kind === 'list') return record('result', { tools: (result.tools ?? []).map((t) => t.name), detail: 'ok' });
    return record('result', {
      isError: result.isError ?? false,
      structured: result.structuredContent ?? null,
      detail: `exit ${run.code}`,
    });
  }
  if (run.timedOut) return record('failure', { detail: `CLI gave no answer within ${CLI_TIMEOUT_MS} ms` });
  const envelope = lastJsonLine(run.stderr)?.error;
  if (!envelope) return record('failure', { detail: `exit ${run.code}, no JSON on stdout or stderr` });
  const detail = `exit ${run.code} ${envelope.code}: ${String(envelope.message).split('\n')[0]}`.slice(0, 300);
  const local = LOCAL_ERRORS.some((pattern) => pattern.test(String(envelope.message)));
  if (envelope.status === undefined && envelope.code === 'error' && !local) return record('error', { detail });
  return record('failure', { detail: envelope.status === undefined ? detail : `HTTP ${envelope.status}; ${detail}` });
}

function runCli(argv, env) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, argv, { env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    const run = { code: null, stdout: '', stderr: '', timedOut: false };
    child.stdout.on('data', (chunk) => (run.stdout += chunk));
    child.stderr.on('data', (chunk) => (run.stderr += chunk));
    const timer = setTimeout(() => {
      run.timedOut = true;
      try {
        process.kill(-child.pid, 'SIGKILL'); // its process group: the CLI and a stdio server it started
      } catch {
        // already gone
      }
    }, CLI_TIMEOUT_MS);
    child.on('error', (err) => {
      run.stderr += `\n${JSON.stringify({ error: { code: 'spawn', message: String(err) } })}`;
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      run.code = code;
      resolve(run);
    });
  });
}

function connect(args) {
  // The CLI keeps a catalog, client config and secret store under ~/.mcp-inspector; a throwaway
  // HOME keeps the run from reading or writing the user's.
  const home = mkdtempSync(join(tmpdir(), 'toolkeeper-inspector-'));
  // Node's compile cache, kept beside the install, spares each of the many CLI starts re-parsing its
  // bundle (about 0.15 s of the CLI's 0.85 s start on this machine).
  const compileCache = fileURLToPath(new URL('../.compile-cache/', import.meta.url));
  const env = { ...process.env, HOME: home, NODE_COMPILE_CACHE: compileCache };
  const launcher = launcherPath();
  const common = ['--cli', '--format', 'json', '--protocol-era', ERAS[args.mode], '--connect-timeout', '10000'];
  const target =
    args.transport === 'http'
      ? ['--transport', 'http', '--server-url', args.url]
      : [
          '--transport',
          'stdio',
          ...Object.entries(serverEnv()).flatMap(([key, value]) => ['-e', `${key}=${value}`]),
          '--',
          ...args.command,
        ];
  const run = async (kind, method) => judge(kind, await runCli([launcher, ...common, ...method, ...target], env));
  return Promise.resolve({
    list: () => run('list', ['--method', 'tools/list']),
    call: (op) =>
      run('call', [
        '--method',
        'tools/call',
        '--tool-name',
        op.name,
        '--tool-args-json',
        JSON.stringify(op.arguments),
        ...Object.entries(op.meta ?? {}).flatMap(([key, value]) => ['--tool-metadata', `${key}=${value}`]),
      ]),
    ping: async () => record('failure', { detail: 'the CLI has no ping method' }),
    era: () => null, // the CLI's JSON output does not say which version was negotiated
    close: async () => rmSync(home, { recursive: true, force: true }),
  });
}

await runDriver({
  client: `@modelcontextprotocol/inspector ${installedVersion(PACKAGE)} (--cli)`,
  modes: Object.keys(ERAS),
  connect,
  classify: () => ({ outcome: 'failure' }), // session methods never throw: judge() builds every record
});
