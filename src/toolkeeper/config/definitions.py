"""The one table of the gateway's configuration keys.

Every key of ``toolkeeper serve --config FILE`` is one :class:`Setting` row here: its dotted
key, TOML type, default, allowed values or range, a one-line description and the ``serve``
flag that overrides it. The loader (:mod:`toolkeeper.config.loader`) checks a file against
these rows and nothing else, and the reference page (``docs/configuration.md``, written by
:mod:`toolkeeper.config.reference`) is rendered from them, so the two cannot drift.

Key patterns: a ``*`` segment is a table name the operator chooses (``limits.tenants.acme``);
a ``[]`` suffix marks an array of tables (``[[auth.jwt.issuers]]``). Adding a key means adding
a row (and reading it where the feature is built).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from toolkeeper.contracts.redaction import PERSONAL_KEYS, PERSONAL_MODES
from toolkeeper.contracts.spec import DataClassification, SideEffect

__all__ = ["SECTIONS", "SETTINGS", "Section", "Setting", "default_of", "setting"]

STRING: Final = "string"
INTEGER: Final = "integer"
FLOAT: Final = "float"
BOOLEAN: Final = "boolean"
STRINGS: Final = "array of strings"


@dataclass(frozen=True, slots=True)
class Setting:
    """One configuration key. ``check`` names a value check of the loader (``url``,
    ``http_url``, ``registry_url``, ``readable_file``, ``directory``, ``handlers_ref``,
    ``url_path``, ``host``, ``sealing_keys_file``); ``choices`` also applies to each element of an array. A
    ``None`` default is "unset" (a per-tenant or per-tool override that keeps the default)."""

    key: str
    type: str
    default: Any
    doc: str
    flag: str | None = None
    choices: tuple[str, ...] | None = None
    minimum: float | None = None
    maximum: float | None = None
    min_open: bool = False
    check: str | None = None
    required: bool = False


@dataclass(frozen=True, slots=True)
class Section:
    """A table of the file. ``optional``: its absence means something (the value is then
    ``None``) rather than "every key at its default"."""

    key: str
    doc: str
    optional: bool = False


_LEVELS = ("debug", "info", "warning", "error")
_ALGORITHMS = ("HS256", "RS256", "ES256", "EdDSA")
_CLEARANCES = tuple(c.value for c in DataClassification)
_SIDE_EFFECTS = tuple(s.value for s in SideEffect)
_ERAS = ("auto", "modern", "legacy")
_DRIFT_ACTIONS = ("publish", "quarantine")
_DAY: Final = 86400.0

SECTIONS: Final[tuple[Section, ...]] = (
    Section("registry", "Where contracts, API keys and the call log are stored."),
    Section("server", "The listener: transport, address, path and connection bounds."),
    Section("legacy", "The legacy era (2025-11-25): HTTP sessions and their bounds, "
                      "resumable SSE streams (event ids, `Last-Event-ID` replay) and requests "
                      "a handler sends to its client (elicitation, sampling, roots)."),
    Section("estate", "Contracts published at start (if absent) and handler modules served."),
    Section("auth", "How an HTTP request's principal is established (OAuth 2.1 resource "
                    "server, RFC 9728 metadata)."),
    Section("auth.stdio", "The principal of a stdio server; absent: the anonymous local "
                          "principal.", optional=True),
    Section("auth.jwt", "JWT bearer tokens."),
    Section("auth.jwt.issuers[]", "One trusted token issuer (`[[auth.jwt.issuers]]`, repeat "
                                  "for several)."),
    Section("sealing", "Keys that seal the state clients carry back (`tools/list` cursors, "
                       "a call's request state); the same on every replica."),
    Section("limits", "Per-principal rate and concurrency limits, and the call timeout."),
    Section("limits.tenants.*", "Overrides for one tenant (`[limits.tenants.NAME]`)."),
    Section("limits.tools.*", "Overrides for one tool (`[limits.tools.\"NAME\"]`)."),
    Section("calllog", "The durable call log in the registry store."),
    Section("metrics", "Prometheus exposition on a separate listener."),
    Section("logging", "Log lines on standard error (always redacted), and the personal-data "
            "policy that log lines, conformance evidence and the call log's digest share. "
            "An ask a handler did not catch (`AskError`: the client refused, or did not "
            "answer) is one WARNING line with its code, the traceback at `debug` only. "
            "Access lines are logged at `info`; `access` chooses which."),
    Section("gate", "The release gate's keys (docs/gate.md): the key `toolkeeper gate "
                    "rollback-evidence` signs with, and the keys whose signatures it trusts. "
                    "Unset here, the environment names them: `TOOLKEEPER_GATE_KEY_ID` and "
                    "`TOOLKEEPER_GATE_KEY_FILE` the signing key, `TOOLKEEPER_GATE_TRUSTED_KEYS` "
                    "more trusted keys (`ID=FILE`, separated by commas or spaces). A key file "
                    "holds an Ed25519 key (PEM: private to sign, public to trust) or an "
                    "HMAC-SHA-256 secret in hex digits (at least 32 bytes); its content is "
                    "never printed."),
    Section("gate.trusted_keys[]", "One trusted key (`[[gate.trusted_keys]]`, repeat for "
                                   "several); the signing key is trusted as well."),
    Section("release", "Progressive rollouts (docs/rollouts.md): the gateway evaluates the "
                       "registry's running rollouts itself, with the `[gate]` signing key (none "
                       "configured: not here), reading the durable call log; on a shared "
                       "registry one replica at a time."),
    Section("upstreams[]", "An upstream MCP server put under contract (`[[upstreams]]`, "
                           "repeat for several; docs/upstreams.md): reconciled into the "
                           "registry at start, its tools imported as contracts."),
    Section("upstreams[].drift", "What a sync does with each class of drift in this "
                                 "upstream's tools (`[upstreams.drift]` after its "
                                 "`[[upstreams]]`): `publish` it as the next version or "
                                 "`quarantine` it until `toolkeeper upstream approve`. An "
                                 "annotation change that lowers the declared risk is always "
                                 "quarantined."),
    Section("upstreams[].tools.*", "Contract metadata for one of this upstream's tools, by "
                                   "its upstream name (`[upstreams.tools.NAME]`)."),
)

SETTINGS: Final[tuple[Setting, ...]] = (
    Setting("registry.url", STRING, "", "Registry URL: `memory:`, `sqlite:///path.db` or "
            "`postgresql://...`; empty: `TOOLKEEPER_REGISTRY`, else the user data SQLite file.",
            flag="--registry", check="registry_url"),
    # server
    Setting("server.transport", STRING, "http", "Serve Streamable HTTP or stdin/stdout.",
            flag="--stdio", choices=("http", "stdio")),
    Setting("server.host", STRING, "127.0.0.1", "Listen address; a non-loopback one needs "
            "`auth.methods`.", flag="--host", check="host"),
    Setting("server.port", INTEGER, 8000, "Listen port (0: any free port).", flag="--port",
            minimum=0, maximum=65535),
    Setting("server.path", STRING, "/mcp", "The MCP endpoint path.", flag="--path",
            check="url_path"),
    Setting("server.allowed_hosts", STRINGS, [], "Also accept these Host headers "
            "(`HOST[:PORT|:*]`, DNS-rebinding allow list).", flag="--allow-host"),
    Setting("server.allowed_origins", STRINGS, [], "Also accept these Origins "
            "(`SCHEME://HOST[:PORT|:*]`).", flag="--allow-origin"),
    Setting("server.json_response", BOOLEAN, False, "Always answer JSON (progress and log "
            "notifications are dropped).", flag="--json-response"),
    Setting("server.legacy_sessions", STRING, "stateful", "Legacy-era sessions: kept per "
            "process, or none (a request without a session id is served at its header's "
            "version).", flag="--legacy-sessions", choices=("stateful", "stateless")),
    Setting("server.head_timeout_s", FLOAT, 10.0, "Close a connection whose request head is "
            "not complete this long after accept or its last response.", flag="--head-timeout",
            minimum=0, maximum=_DAY, min_open=True),
    Setting("server.idle_timeout_s", FLOAT, 5.0, "Close a kept-alive connection silent this "
            "long after a response.", flag="--idle-timeout", minimum=0, maximum=_DAY,
            min_open=True),
    Setting("server.body_timeout_s", FLOAT, 5.0, "Answer 408 when the next part of a request "
            "body takes longer than this.", minimum=0, maximum=_DAY, min_open=True),
    Setting("server.max_body_bytes", INTEGER, 4194304, "The largest request body accepted "
            "(413 beyond).", minimum=1, maximum=2**31),
    Setting("server.max_connections", INTEGER, 1000, "Answer 503 to connections beyond this "
            "many open ones.", flag="--max-connections", minimum=1, maximum=1_000_000),
    Setting("server.max_connections_per_ip", INTEGER, 0, "Answer 503 to a connection from "
            "an address that already has this many open, so silent connections from one source "
            "cannot hold the whole `max_connections` (0: a quarter of it, at least 1). Behind a "
            "reverse proxy every connection comes from the proxy: set it to `max_connections` "
            "and bound each client at the proxy.", flag="--max-connections-per-ip", minimum=0,
            maximum=1_000_000),
    Setting("server.backlog", INTEGER, 2048, "Connections the kernel queues for accepting.",
            flag="--backlog", minimum=1, maximum=1_000_000),
    Setting("server.list_page_size", INTEGER, 100, "Tools per `tools/list` page; a longer "
            "list is paged with sealed `nextCursor`s (re-listed from the start after a "
            "change).", minimum=1, maximum=100_000),
    Setting("server.list_cursor_ttl_s", FLOAT, 3600.0, "How long a `tools/list` cursor "
            "stays usable.", minimum=0, maximum=_DAY, min_open=True),
    Setting("server.max_reported_errors", INTEGER, 50, "Validation errors an invalid-arguments "
            "result lists at most (the first, sorted; `omitted` counts the rest; at most 32 KiB "
            "of them whatever this is). At most 20 times this many argument values (at least "
            "1,000) are checked for errors; a result for arguments of more says `truncated`.",
            minimum=1, maximum=10_000),
    # legacy
    Setting("legacy.sse_retry_ms", INTEGER, 1000, "The `retry` hint of a resumable stream's "
            "priming event, in milliseconds: how long a client waits before it resumes.",
            minimum=0, maximum=3_600_000),
    Setting("legacy.replay_events", INTEGER, 256, "Events one resumable stream keeps for "
            "`Last-Event-ID` (0: no resumable streams, no event ids).", minimum=0,
            maximum=1_000_000),
    Setting("legacy.replay_bytes", INTEGER, 1048576, "Bytes of events one stream keeps (the "
            "oldest go first; the newest is always kept).", minimum=1, maximum=2**31),
    Setting("legacy.replay_total_bytes", INTEGER, 67108864, "Bytes of events all streams keep "
            "together (the streams that finished longest ago go first).", minimum=1,
            maximum=2**40),
    Setting("legacy.resume_window_s", FLOAT, 60.0, "How long a finished stream stays "
            "resumable, and how long a stream whose client left waits for it to resume before "
            "its request is cancelled.", minimum=0, maximum=_DAY, min_open=True),
    Setting("legacy.ask_timeout_s", FLOAT, 300.0, "How long a handler waits for the client's "
            "answer to `elicitation/create`, `sampling/createMessage` or `roots/list`.",
            minimum=0, maximum=_DAY, min_open=True),
    Setting("legacy.max_pending_asks", INTEGER, 1000, "Requests to clients awaiting an answer "
            "at once (more are refused to the handler).", minimum=1, maximum=1_000_000),
    Setting("legacy.max_pending_asks_per_session", INTEGER, 100, "Requests to clients one "
            "session's handlers await at once (more are refused to the handler), so one "
            "session cannot take every slot of `legacy.max_pending_asks`.", minimum=1,
            maximum=1_000_000),
    Setting("legacy.max_sessions", INTEGER, 10_000, "Live sessions (HTTP, `stateful`) kept in "
            "all; beyond, the least recently used session of anyone ends.", minimum=1,
            maximum=10_000_000),
    Setting("legacy.max_session_bytes", INTEGER, 16_777_216, "Bytes of the clients' "
            "`capabilities` and `clientInfo` all sessions keep together (the least recently "
            "used go first).", minimum=0, maximum=2**40),
    Setting("legacy.max_sessions_per_credential", INTEGER, 1000, "Live sessions of one "
            "credential (API key, JWT subject); its own least recently used one ends for a "
            "new one beyond (0: no bound of its own).", minimum=0, maximum=10_000_000),
    Setting("legacy.max_session_bytes_per_credential", INTEGER, 2_097_152, "Bytes one "
            "credential's sessions keep together (its own least recently used go first; 0: no "
            "bound of its own).", minimum=0, maximum=2**40),
    Setting("legacy.max_sessions_per_tenant", INTEGER, 2500, "Live sessions of one tenant "
            "(every credential, and the principals without one); its own least recently used "
            "one ends for a new one beyond, never another tenant's (0: no bound of its own).",
            minimum=0, maximum=10_000_000),
    Setting("legacy.max_session_bytes_per_tenant", INTEGER, 4_194_304, "Bytes one tenant's "
            "sessions keep together (its own least recently used go first; 0: no bound of its "
            "own).", minimum=0, maximum=2**40),
    # estate
    Setting("estate.demo", BOOLEAN, False, "Publish the demo estate if absent and serve its "
            "handlers.", flag="--demo"),
    Setting("estate.dirs", STRINGS, [], "Directories whose contract files (JSON/YAML) are "
            "published if absent.", flag="--estate", check="directory"),
    Setting("estate.handlers", STRINGS, [], "Handler modules to serve, `module:ATTR` or "
            "`path/to/file.py:ATTR`; the contracts their typed tools derive are published "
            "through the publish guard at start.", flag="--handlers", check="handlers_ref"),
    Setting("estate.strict", BOOLEAN, False, "Refuse to start (exit 1, nothing published) "
            "when a callable contract has no handler here (`serve.contract_unbound`) or a "
            "handler has no contract (`serve.handler_uncontracted`); without it each is a "
            "warning line at start, and a contract without a handler is not listed.",
            flag="--strict"),
    # auth
    Setting("auth.methods", STRINGS, [], "Credentials accepted over HTTP; empty: the "
            "anonymous local principal (loopback hosts only).", flag="--auth",
            choices=("keys", "jwt")),
    Setting("auth.resource", STRING, "", "This gateway's resource URL (RFC 8707 audience, RFC "
            "9728 `resource`); empty: derived from host, port and path (with `jwt` on a host that is "
            "not loopback: required, unless every issuer sets `audience`).", check="http_url"),
    Setting("auth.authorization_servers", STRINGS, [], "Authorization servers named in the "
            "protected-resource metadata.", check="http_url"),
    Setting("auth.scopes_supported", STRINGS, [], "Scopes named in the protected-resource "
            "metadata."),
    Setting("auth.stdio.tenant", STRING, "local", "Tenant of the stdio principal.",
            check="nonempty"),
    Setting("auth.stdio.scopes", STRINGS, [], "Scopes of the stdio principal.",
            check="nonempty"),
    Setting("auth.stdio.clearance", STRING, "restricted", "Clearance of the stdio principal.",
            choices=_CLEARANCES),
    Setting("auth.jwt.max_token_lifetime_s", INTEGER, 86_400, "Longest lifetime a token may "
            "claim, in seconds: `exp - iat`, or `exp -` now (plus `leeway_s`) without `iat`; a "
            "longer one is refused (`lifetime_too_long`). An issuer's own "
            "`max_token_lifetime_s` replaces it.", minimum=1, maximum=31_536_000),
    Setting("auth.jwt.issuers[].issuer", STRING, None, "The issuer; a token's `iss` must "
            "equal it.", required=True, check="nonempty"),
    Setting("auth.jwt.issuers[].audience", STRING, "", "The `aud` a token must carry; empty: "
            "`auth.resource`."),
    Setting("auth.jwt.issuers[].algorithms", STRINGS, ["RS256"], "Signature algorithms "
            "accepted; each must match the key's type.", choices=_ALGORITHMS),
    Setting("auth.jwt.issuers[].secret_file", STRING, "", "File holding the HS256 shared "
            "secret (at least 32 bytes, surrounding whitespace ignored).", check="secret_file"),
    Setting("auth.jwt.issuers[].public_key_file", STRING, "", "PEM public key file.",
            check="readable_file"),
    Setting("auth.jwt.issuers[].jwks_file", STRING, "", "JWKS (JSON Web Key Set) file.",
            check="readable_file"),
    Setting("auth.jwt.issuers[].jwks_url", STRING, "", "JWKS URL, fetched and cached.",
            check="http_url"),
    Setting("auth.jwt.issuers[].private_key_file", STRING, "", "Development only: a PEM "
            "private key (unencrypted) that `toolkeeper token mint` signs this issuer's "
            "tokens with. The gateway never reads it: it verifies with `public_key_file`, "
            "`jwks_file` or `jwks_url`, and the key's public half must be among them.",
            check="readable_file"),
    Setting("auth.jwt.issuers[].jwks_refresh_s", INTEGER, 300, "Seconds between JWKS "
            "fetches.", minimum=1, maximum=_DAY),
    Setting("auth.jwt.issuers[].leeway_s", INTEGER, 30, "Clock leeway for `exp` and `nbf`, "
            "in seconds.", minimum=0, maximum=3600),
    Setting("auth.jwt.issuers[].tenant_claim", STRING, "tenant", "Claim holding the tenant.",
            check="nonempty"),
    Setting("auth.jwt.issuers[].scopes_claim", STRING, "scope", "Claim holding the scopes "
            "(space-separated string or list).", check="nonempty"),
    Setting("auth.jwt.issuers[].clearance_claim", STRING, "clearance", "Claim holding the "
            "clearance.", check="nonempty"),
    Setting("auth.jwt.issuers[].max_token_lifetime_s", INTEGER, None, "This issuer's longest "
            "token lifetime, in seconds (unset: `auth.jwt.max_token_lifetime_s`).", minimum=1,
            maximum=31_536_000),
    Setting("auth.jwt.issuers[].tenants", STRINGS, None, "The tenants this issuer's tokens may "
            "name (another is refused, `tenant_not_allowed`). Unset: any tenant, as one "
            "issuer trusted for every tenant; with several issuers, each one unset is said "
            "once in the log at start (WARNING). An empty list is refused.", check="nonempty"),
    # sealing
    Setting("sealing.keys_file", STRING, "", "File of sealing keys, one per line: base64 of 32 "
            "random bytes each; the first seals, every one opens (rotation). Empty: the "
            "`keys_env` variable, else a random key per process (state resumes only there).",
            check="sealing_keys_file"),
    Setting("sealing.keys_env", STRING, "TOOLKEEPER_SEALING_KEYS", "Environment variable read "
            "for the keys when `keys_file` is empty (separated by commas or spaces; set but "
            "empty is refused). Empty: none is read."),
    Setting("sealing.request_state_ttl_s", FLOAT, 600.0, "How long a call's `requestState` "
            "(an `input_required` round, 2026-07-28) can be resumed, in seconds; after it the "
            "retry is refused (`sealReason: \"expired\"`) and a spent state's record may be "
            "dropped.", minimum=0, min_open=True, maximum=_DAY),
    # limits
    Setting("limits.rate_per_s", FLOAT, 0.0, "Calls per second per principal (token bucket; "
            "0: unlimited).", minimum=0, maximum=1e6),
    Setting("limits.burst", INTEGER, 0, "Bucket size (0: max(1, ceil(rate_per_s))).",
            minimum=0, maximum=1_000_000),
    Setting("limits.concurrency", INTEGER, 0, "Calls in flight per principal (0: "
            "unlimited).", minimum=0, maximum=1_000_000),
    Setting("limits.call_timeout_s", FLOAT, 0.0, "Per-call timeout (0: none).", minimum=0,
            maximum=_DAY),
    Setting("limits.tenants.*.rate_per_s", FLOAT, None, "The tenant's `limits.rate_per_s` "
            "(unset: the default's).",
            minimum=0, maximum=1e6),
    Setting("limits.tenants.*.burst", INTEGER, None, "The tenant's `limits.burst`.", minimum=0,
            maximum=1_000_000),
    Setting("limits.tenants.*.concurrency", INTEGER, None, "The tenant's `limits.concurrency`.",
            minimum=0, maximum=1_000_000),
    Setting("limits.tools.*.call_timeout_s", FLOAT, None, "The tool's call timeout (0: none; "
            "unset: `limits.call_timeout_s`).",
            minimum=0, maximum=_DAY),
    # calllog
    Setting("calllog.durable", BOOLEAN, True, "Write dispatched calls to the registry store."),
    Setting("calllog.flush_interval_ms", INTEGER, 200, "Longest time a call-log row waits "
            "before it is written (what a crash may lose).", minimum=1, maximum=60_000),
    Setting("calllog.max_batch", INTEGER, 1000, "Most rows written in one batch.", minimum=1,
            maximum=1_000_000),
    Setting("calllog.retention_days", INTEGER, 30, "Delete rows older than this (0: keep).",
            minimum=0, maximum=36500),
    Setting("calllog.retention_rows", INTEGER, 1_000_000, "Keep at most this many rows "
            "(0: no cap).", minimum=0, maximum=10**12),
    Setting("calllog.refusals", BOOLEAN, True, "Also write refused calls to the refusal log "
            "(`toolkeeper calls --refused`, docs/refusal-log.md), with `calllog.durable`: the "
            "same batching and retention, counted apart."),
    # metrics
    Setting("metrics.port", INTEGER, 0, "Prometheus exposition port (0: off).",
            flag="--metrics-port", minimum=0, maximum=65535),
    Setting("metrics.host", STRING, "127.0.0.1", "Prometheus exposition address.",
            check="host"),
    # logging
    Setting("logging.level", STRING, "info", "Least severe level logged.", flag="--log-level",
            choices=_LEVELS),
    Setting("logging.format", STRING, "text", "`text` lines or one JSON object per line.",
            flag="--log-format", choices=("text", "json")),
    Setting("logging.otel", BOOLEAN, False, "OpenTelemetry spans (needs `toolkeeper[otel]`)."),
    Setting("logging.access", STRING, "errors", "HTTP access lines: every request, only "
            "answers with status 400 or above, or none (the call log and "
            "`toolkeeper_http_responses_total` count every request).", flag="--access-log",
            choices=("all", "errors", "off")),
    Setting("logging.personal_data", STRING, "keep", "The values of `logging.personal_keys` "
            "in log lines, evidence and the call log's digest: `keep` them, `hash` them "
            "(`[HASHED sha256:...]`, equal values stay equal) or `mask` them (`[PERSONAL]`). "
            "Secrets are always redacted.", choices=PERSONAL_MODES),
    Setting("logging.personal_keys", STRINGS, list(PERSONAL_KEYS), "Keys holding personal "
            "data (compared case-folded, without `-`, `_`, `.` and spaces)."),
    # gate
    Setting("gate.signing_key_id", STRING, "", "The signing key's id (the evidence's "
            "`attestation.signer`); needed with `signing_key_file`."),
    Setting("gate.signing_key_file", STRING, "", "The signing key's file: an Ed25519 private "
            "key (PEM, unencrypted) or an HMAC secret (hex). Empty: `TOOLKEEPER_GATE_KEY_FILE`.",
            check="readable_file"),
    Setting("gate.trusted_keys[].id", STRING, None, "The key id a signature names.",
            required=True, check="nonempty"),
    Setting("gate.trusted_keys[].file", STRING, None, "The key's file: an Ed25519 public key "
            "(PEM) or an HMAC secret (hex).", required=True, check="readable_file"),
    Setting("gate.trusted_keys[].algorithm", STRING, "", "The key's algorithm; empty: told by "
            "the file (PEM: `ed25519`, else `hmac-sha256`).", choices=("hmac-sha256", "ed25519")),
    # release
    Setting("release.evaluate_every_s", FLOAT, 5.0, "Seconds between the gateway's looks at "
            "its rollouts; a rollout whose step interval is up is evaluated at the next look "
            "(0: this gateway never evaluates).", minimum=0, maximum=_DAY),
    # upstreams
    Setting("upstreams[].name", STRING, None, "The upstream's name (1-64 letters, digits, "
            "`_`, `.` or `-`), unique.", required=True),
    Setting("upstreams[].url", STRING, "", "Its Streamable HTTP endpoint (either era; the "
            "legacy fallback is allowed). Exactly one of `url` and `command`.", check="http_url"),
    Setting("upstreams[].command", STRINGS, [], "The stdio command and its arguments."),
    Setting("upstreams[].prefix", STRING, "", "Prepended to each tool's name: the exposed "
            "name is `prefix + name`."),
    Setting("upstreams[].classification", STRING, "internal", "The data classification of "
            "its tools' contracts.", choices=_CLEARANCES),
    Setting("upstreams[].side_effect", STRING, "write", "The side effect of its tools' "
            "contracts (an annotation may raise it, never lower it).", choices=_SIDE_EFFECTS),
    Setting("upstreams[].tenants", STRINGS, [], "Tenants its tools are visible to (empty: "
            "every tenant)."),
    Setting("upstreams[].scopes", STRINGS, [], "Scopes a caller needs for its tools."),
    Setting("upstreams[].token_file", STRING, "", "File whose content is sent to the upstream "
            "as `Authorization: Bearer`; the caller's own token never is.", check="readable_file"),
    Setting("upstreams[].header_file", STRING, "", "File of `Name: value` lines sent to the "
            "upstream as headers (instead of `token_file`).", check="readable_file"),
    Setting("upstreams[].era", STRING, "auto", "The era to speak to it: selected (`auto`), or "
            "only `modern` (2026-07-28) or `legacy` (2025-11-25).", choices=_ERAS),
    Setting("upstreams[].sync_interval_s", FLOAT, 0.0, "Seconds between periodic syncs (0: "
            "at start, on `notifications/tools/list_changed` and on `upstream sync` only).",
            minimum=0, maximum=_DAY),
    Setting("upstreams[].call_timeout_s", FLOAT, 30.0, "A forwarded call's timeout.",
            minimum=0, maximum=_DAY, min_open=True),
    Setting("upstreams[].drift.major", STRING, "quarantine", "A change the classifier calls "
            "MAJOR (breaking).", choices=_DRIFT_ACTIONS),
    Setting("upstreams[].drift.minor", STRING, "publish", "An additive (MINOR) change: "
            "published as the next MINOR.", choices=_DRIFT_ACTIONS),
    Setting("upstreams[].drift.patch", STRING, "publish", "A schema-only PATCH change: "
            "published as the next PATCH.", choices=_DRIFT_ACTIONS),
    Setting("upstreams[].drift.descriptive", STRING, "quarantine", "A changed description, "
            "title or annotations (what a model reads).", choices=_DRIFT_ACTIONS),
    Setting("upstreams[].tools.*.classification", STRING, None, "This tool's data "
            "classification.", choices=_CLEARANCES),
    Setting("upstreams[].tools.*.side_effect", STRING, None, "This tool's side effect.",
            choices=_SIDE_EFFECTS),
    Setting("upstreams[].tools.*.tenants", STRINGS, None, "This tool's tenants."),
    Setting("upstreams[].tools.*.scopes", STRINGS, None, "This tool's required scopes."),
)

_BY_KEY: Final = {row.key: row for row in SETTINGS}


def setting(key: str) -> Setting:
    """The row of ``key`` (a pattern such as ``auth.jwt.issuers[].issuer``)."""
    return _BY_KEY[key]


def default_of(key: str) -> Any:
    """The default of ``key`` (flags use it, so ``--help`` shows the table's default)."""
    return _BY_KEY[key].default
