"""The checkpoint record, moved to :mod:`nertz_env.agents.meta`; this module re-exports it for old imports."""

from nertz_env.agents.meta import (
    FORMAT,
    ZIP_MEMBER,
    CheckpointError,
    IncompatibleCheckpointError,
    check_compatible,
    make_meta,
    meta_config,
    package_version,
    read_meta,
    sidecar_path,
    write_meta,
)

__all__ = [
    "FORMAT",
    "ZIP_MEMBER",
    "CheckpointError",
    "IncompatibleCheckpointError",
    "check_compatible",
    "make_meta",
    "meta_config",
    "package_version",
    "read_meta",
    "sidecar_path",
    "write_meta",
]
