"""A second gateway-like process for the revocation test: a Registry on the URL in argv[1] and
its KeyAuthenticator, as a gateway replica builds them. It prints ``ready``, then answers each
token read from stdin (one per line) with ``ok <tenant>`` or ``refused <reason>``."""

from __future__ import annotations

import sys

from toolkeeper.auth.keys import key_authenticator
from toolkeeper.errors import AuthenticationError
from toolkeeper.registry import Registry


def main() -> None:
    with Registry.open(sys.argv[1], create=False) as registry:
        authenticator = key_authenticator(registry)
        print("ready", flush=True)
        for line in sys.stdin:
            try:
                print("ok", authenticator.authenticate(line.strip()).tenant, flush=True)
            except AuthenticationError as exc:
                print("refused", exc.reason, flush=True)


if __name__ == "__main__":
    main()
