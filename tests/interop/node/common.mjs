// Shared by the Node interop drivers: argument parsing, the operation table, the time bounds and the
// one JSON report line. A driver supplies `connect` (a session with list/call/ping/era/close) and
// `classify` (an exception -> {outcome, code, data}); everything else is here, once.
//
// The operations mirror OPS in tests/interop/interop_kit.py (same names, same order, same arguments
// against the `toolkeeper serve --demo` estate); the kit passes only their names with --ops.

import { readFileSync } from 'node:fs';

export const OP_TIMEOUT_MS = 10_000;
export const RUN_TIMEOUT_MS = 60_000;
const CLOSE_TIMEOUT_MS = 5_000;
const DETAIL_MAX = 300;

const VALID_LOOKUP = { reference: 'PMT-771', include_legs: true };

/** name -> what the op does; the order of the keys is the order the ops run in. */
export const OPS = {
  list: { kind: 'list' },
  call_valid: { kind: 'call', name: 'payments.lookup', arguments: VALID_LOOKUP },
  call_invalid: {
    kind: 'call',
    name: 'payments.lookup',
    arguments: { reference: 'PMT771', include_legs: 'yes', urgent: true },
  },
  call_unknown: { kind: 'call', name: 'no.such.tool', arguments: {} },
  call_retired: {
    kind: 'call',
    name: 'db.query',
    arguments: { sql: 'select 1', timeout_ms: 5 },
    meta: { schemaVersion: '3.0.0' },
  },
  call_pinned: {
    kind: 'call',
    name: 'db.query',
    arguments: { sql: 'select 1', timeout: 5 },
    meta: { schemaVersion: '4.0.0' },
  },
  call_output: { kind: 'call', name: 'tickets.create', arguments: { title: 'printer on fire' } },
  ping: { kind: 'ping' },
  call_after: { kind: 'call', name: 'payments.lookup', arguments: VALID_LOOKUP },
};

/** The modes the matrix asks for, as the names the kit uses. */
export const MODES = ['auto', 'legacy', '2026-07-28'];

// Environment a stdio server inherits. The SDKs' stdio transports pass only a short default list
// (HOME, PATH, ...) to the child, which would drop the PYTHONPATH that points a worktree's sources
// ahead of the installed package; these prefixes carry what the Python server needs, and nothing else
// of the caller's environment is handed on.
const SERVER_ENV_PREFIXES = ['PYTHON', 'TOOLKEEPER_', 'COVERAGE_', 'VIRTUAL_ENV'];

export function serverEnv() {
  const picked = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (value !== undefined && SERVER_ENV_PREFIXES.some((prefix) => key.startsWith(prefix))) {
      picked[key] = value;
    }
  }
  return picked;
}

/** The version of an installed package, read from the install the driver runs from (one pin: package.json). */
// The transport a driver's client connects through, from its own package's classes: HTTP to
// --url, or the server command on stdio with serverEnv() over the SDK's default environment.
export function transportOf(args, { Http, Stdio, environment }) {
  if (args.transport === 'http') return new Http(new URL(args.url));
  const [command, ...rest] = args.command;
  return new Stdio({
    command,
    args: rest,
    env: { ...environment(), ...serverEnv() },
    stderr: 'inherit',
  });
}

export function installedVersion(pkg) {
  const manifest = new URL(`../node_modules/${pkg}/package.json`, import.meta.url);
  return JSON.parse(readFileSync(manifest, 'utf8')).version;
}

export function parseArgs(argv, supportedModes) {
  const args = { transport: null, url: null, command: null, mode: null, ops: Object.keys(OPS) };
  for (let i = 0; i < argv.length; i += 2) {
    const [flag, value] = [argv[i], argv[i + 1]];
    if (value === undefined) usage(`${flag} needs a value`);
    if (flag === '--transport') args.transport = value;
    else if (flag === '--url') args.url = value;
    else if (flag === '--command') args.command = JSON.parse(value);
    else if (flag === '--mode') args.mode = value;
    else if (flag === '--ops') args.ops = value.split(',').filter(Boolean);
    else usage(`unknown argument ${flag}`);
  }
  if (!['http', 'stdio'].includes(args.transport)) usage('--transport must be http or stdio');
  if (args.transport === 'http' && !args.url) usage('--transport http needs --url');
  if (args.transport === 'stdio' && !(Array.isArray(args.command) && args.command.length > 0)) {
    usage('--transport stdio needs --command as a non-empty JSON array');
  }
  if (!supportedModes.includes(args.mode)) usage(`--mode must be one of ${supportedModes.join(', ')}`);
  const unknown = args.ops.filter((op) => !(op in OPS));
  if (unknown.length > 0) usage(`unknown ops: ${unknown.join(', ')}`);
  // Run in OPS order whatever order --ops named them in.
  args.ops = Object.keys(OPS).filter((op) => args.ops.includes(op));
  return args;
}

function usage(message) {
  process.stderr.write(`usage error: ${message}\n`);
  process.exit(2);
}

export function detailOf(err) {
  const name = err?.constructor?.name ?? typeof err;
  const message = String(err?.message ?? err).split('\n')[0];
  return `${name}: ${message}`.slice(0, DETAIL_MAX);
}

class OpTimeout extends Error {}

function bounded(promise, ms, what) {
  let timer;
  const deadline = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new OpTimeout(`${what} gave no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}

function record(outcome, fields = {}) {
  return {
    outcome,
    code: fields.code ?? null,
    data: fields.data ?? null,
    isError: fields.isError ?? null,
    structured: fields.structured ?? null,
    tools: fields.tools ?? null,
    detail: fields.detail ?? '',
  };
}

/** A raw client answer -> the op record. `list` gets tool names, calls get isError/structured. */
function fromResult(kind, result) {
  if (kind === 'list') {
    return record('result', { tools: (result?.tools ?? []).map((tool) => tool.name), detail: 'ok' });
  }
  if (kind === 'call') {
    // MCP: an absent isError means false.
    return record('result', {
      isError: result?.isError ?? false,
      structured: result?.structuredContent ?? null,
      detail: 'ok',
    });
  }
  return record('result', { detail: 'ok' });
}

function fromError(err, classify) {
  if (err instanceof OpTimeout) return record('failure', { detail: detailOf(err) });
  const verdict = classify(err);
  return record(verdict.outcome, { code: verdict.code, data: verdict.data, detail: verdict.detail ?? detailOf(err) });
}

/**
 * Run the ops in one session and print the report as the last stdout line.
 * `connect(args)` -> session {list(), call(op), ping(), era(), close()}; a session method may also
 * return a ready op record (`{record: {...}}`) when the client reports outcomes itself (the CLI).
 */
export async function runDriver({ client, modes, connect, classify }) {
  const args = parseArgs(process.argv.slice(2), modes);
  const report = { client, era: null, ops: {} };
  let session = null;
  let printed = false;
  const print = () => {
    if (printed) return;
    printed = true;
    for (const op of args.ops) {
      report.ops[op] ??= record('failure', { detail: 'not run: the run deadline passed' });
    }
    process.stdout.write(`${JSON.stringify(report)}\n`, () => process.exit(0));
  };
  const runDeadline = setTimeout(print, RUN_TIMEOUT_MS);
  try {
    session = await bounded(connect(args), OP_TIMEOUT_MS, 'connect');
    report.era = session.era() ?? null;
  } catch (err) {
    const why = `connect failed: ${detailOf(err)}`;
    for (const op of args.ops) report.ops[op] = record('failure', { detail: why });
  }
  if (session !== null) {
    for (const op of args.ops) {
      const spec = OPS[op];
      try {
        const answer = await bounded(session[spec.kind](spec), OP_TIMEOUT_MS, op);
        report.ops[op] = answer?.record ? record(answer.record.outcome, answer.record) : fromResult(spec.kind, answer);
      } catch (err) {
        report.ops[op] = fromError(err, classify);
      }
    }
    report.era = session.era() ?? report.era;
    await bounded(session.close(), CLOSE_TIMEOUT_MS, 'close').catch(() => {});
  }
  clearTimeout(runDeadline);
  print();
}
