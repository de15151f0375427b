"""The statuses a window and its rules take (docs/gate.md): a rule ``passed``, ``failed``,
``inconclusive`` (not enough evidence to say) or ``ignored`` (it does not apply to this window:
a statistical test on too few samples); a window ``healthy``, ``failed`` or ``inconclusive``."""

from typing import Final

__all__ = ["FAILED", "HEALTHY", "IGNORED", "INCONCLUSIVE", "PASSED"]

HEALTHY: Final = "healthy"
FAILED: Final = "failed"
INCONCLUSIVE: Final = "inconclusive"
IGNORED: Final = "ignored"
PASSED: Final = "passed"
