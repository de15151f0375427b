#!/usr/bin/env bash
# Run the official MCP conformance suite against toolkeeper's gateway, both protocol eras.
#
#   conformance/run.sh [OUT_DIR]
#
# Starts `toolkeeper serve` on a free 127.0.0.1 port with the fixture estate
# (examples/conformance/) over a temporary SQLite registry, runs
# `conformance server --suite all` for 2026-07-28 and 2025-11-25 with the era's
# expected-failures file, stops the server by PID, and prints one summary line per era.
# Exit status: 0 when both runs exit 0 (every failure is an expected one, none is stale);
# 1 when a run fails; 2 when the server cannot be started.
# The suite's raw output and per-check results go to OUT_DIR (default: a temporary directory):
#   python3 $CONF/table.py ours-2026=OUT_DIR/2026-07-28 ours-2025=OUT_DIR/2025-11-25
# Needs Python with toolkeeper installed (the active venv, or $PYTHON) and the suite
# (conformance/setup.sh, run here if the suite is missing).
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
CONF=${CONF:-$HOME/.cache/toolkeeper-conformance}
PYTHON=${PYTHON:-python3}
OUT=${1:-$(mktemp -d)}
START_TIMEOUT_S=${START_TIMEOUT_S:-30}
WORK=$(mktemp -d)
SERVER_PID=

stop_server() {
  if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
    kill -TERM "$SERVER_PID" 2>/dev/null
    for _ in $(seq 1 100); do  # at most 10 s, then force
      kill -0 "$SERVER_PID" 2>/dev/null || break
      sleep 0.1
    done
    kill -0 "$SERVER_PID" 2>/dev/null && kill -KILL "$SERVER_PID" 2>/dev/null
    wait "$SERVER_PID" 2>/dev/null
  fi
  SERVER_PID=
}
trap 'stop_server; rm -rf "$WORK"' EXIT

if [ ! -x "$CONF/node_modules/.bin/conformance" ] || [ ! -x "$CONF/node22/node_modules/.bin/node" ]; then
  CONF=$CONF bash "$ROOT/conformance/setup.sh" || exit 2
fi
export PATH=$CONF/node22/node_modules/.bin:$PATH
mkdir -p "$OUT"

# --port 0: the server binds first and logs its URL, so there is no port race.
"$PYTHON" -m toolkeeper serve --port 0 --log-level warning \
  --registry "sqlite:///$WORK/registry.db" \
  --estate "$ROOT/examples/conformance/contracts" \
  --handlers "$ROOT/examples/conformance/handlers.py:HANDLERS" \
  >"$OUT/server.log" 2>&1 &
SERVER_PID=$!

URL=
for _ in $(seq 1 $((START_TIMEOUT_S * 10))); do
  URL=$(sed -n 's/^toolkeeper gateway on \(http:[^ ]*\)$/\1/p' "$OUT/server.log" | head -1)
  [ -n "$URL" ] && break
  kill -0 "$SERVER_PID" 2>/dev/null || break
  sleep 0.1
done
if [ -z "$URL" ]; then
  echo "conformance: the gateway did not start (it exited, or no URL within ${START_TIMEOUT_S}s); its log:" >&2
  cat "$OUT/server.log" >&2
  exit 2
fi

summaries=()
status=0
for era in 2026-07-28 2025-11-25; do
  rm -rf "${OUT:?}/$era"  # results of an earlier run into the same OUT_DIR would be counted
  "$CONF/node_modules/.bin/conformance" server --url "$URL" --spec-version "$era" --suite all \
    --expected-failures "$ROOT/conformance/expected-failures-${era%%-*}.yml" \
    -o "$OUT/$era" >"$OUT/$era.txt" 2>&1
  rc=$?
  [ "$rc" -eq 0 ] || status=1
  counts=$("$PYTHON" - "$OUT/$era" <<'PY'
import glob, json, os, sys
statuses = [c["status"] for f in glob.glob(os.path.join(sys.argv[1], "*", "checks.json"))
            for c in json.load(open(f))]
scenarios = len(glob.glob(os.path.join(sys.argv[1], "*", "checks.json")))
scored = [s for s in statuses if s in ("SUCCESS", "FAILURE", "WARNING")]
print(f"{scenarios} scenarios, {len(scored)} checks, {statuses.count('SUCCESS')} passed")
PY
)
  if [ "$rc" -ne 0 ]; then  # the suite's verdict, before the summary lines
    echo "--- conformance $era: the suite's baseline verdict (full output in $OUT/$era.txt)"
    sed 's/\x1b\[[0-9;]*m//g' "$OUT/$era.txt" |
      awk '/^(Stale baseline entries|Unexpected failures \()/ { on = 1 } on && !/^Total/'
  fi
  summaries+=("conformance $era: exit $rc ($counts)")
done

stop_server
echo "conformance results: $OUT (python3 \$CONF/table.py ours-2026=$OUT/2026-07-28 ours-2025=$OUT/2025-11-25)"
printf '%s\n' "${summaries[@]}"
exit $status
