#!/usr/bin/env bash
# Install the official MCP conformance suite (needs Node 22, which comes from npm) under $CONF.
# Idempotent; about a minute on a fresh machine. Used by .ci/run and by conformance/run.sh.
set -euo pipefail
CONF=${CONF:-$HOME/.cache/toolkeeper-conformance}
SUITE_VERSION=0.2.0-alpha.12
mkdir -p "$CONF/node22"
if [ ! -x "$CONF/node22/node_modules/.bin/node" ]; then
  ( cd "$CONF/node22" && { [ -f package.json ] || npm init -y >/dev/null; } && npm install -s node@22 >/dev/null )
fi
export PATH=$CONF/node22/node_modules/.bin:$PATH
if [ "$("$CONF/node_modules/.bin/conformance" --version 2>/dev/null)" != "$SUITE_VERSION" ]; then
  ( cd "$CONF" && { [ -f package.json ] || npm init -y >/dev/null; } &&
    npm install -s "@modelcontextprotocol/conformance@$SUITE_VERSION" >/dev/null )
fi
echo "conformance suite ready: node $(node --version), conformance $("$CONF/node_modules/.bin/conformance" --version) in $CONF"
