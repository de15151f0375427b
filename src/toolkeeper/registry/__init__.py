"""The tool registry (SPEC 2): guarded publishing, lifecycle, discovery, pluggable storage.

``Registry`` is the API; ``RegistryStore`` the storage seam with three backends
(``MemoryStore``, ``SQLiteStore``, ``PostgresStore``); ``Principal`` says who is discovering.
"""

from toolkeeper.registry.discovery import is_visible
from toolkeeper.registry.guard import RULES as PUBLISH_RULES
from toolkeeper.registry.location import default_url, open_store
from toolkeeper.registry.memory import MemoryStore
from toolkeeper.registry.principal import Principal
from toolkeeper.registry.registry import PublishOutcome, Registry
from toolkeeper.registry.store import AuditEntry, RegistryStore, Snapshot, StoreTransaction

__all__ = [
    "PUBLISH_RULES",
    "AuditEntry",
    "MemoryStore",
    "Principal",
    "PublishOutcome",
    "Registry",
    "RegistryStore",
    "Snapshot",
    "StoreTransaction",
    "default_url",
    "is_visible",
    "open_store",
]
