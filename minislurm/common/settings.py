"""The daemon-level settings taken from slurm.conf: where to listen, where the key and state live."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from minislurm.core.cluster import ClusterConfig

DEFAULT_CTLD_PORT = 6817


@dataclass
class CtldSettings:
    host: str
    bind: str
    port: int
    key_file: Path
    state_dir: Path
    operators: set[str]


def other(cfg: ClusterConfig, key: str, default: str | None = None) -> str | None:
    """A slurm.conf key minislurm keeps but does not model, looked up without regard to case."""
    for k, v in cfg.other.items():
        if k.lower() == key.lower():
            return v
    return default


def controller_address(cfg: ClusterConfig) -> tuple[str, str, int]:
    """(host name, address, port) from ``SlurmctldHost=name[(addr)]`` and ``SlurmctldPort``."""
    first = (other(cfg, "SlurmctldHost") or "localhost").splitlines()[0]
    m = re.fullmatch(r"([^()]+)(?:\(([^()]+)\))?", first.strip())
    host = m.group(1) if m else first
    addr = (m.group(2) if m and m.group(2) else host)
    port = int((other(cfg, "SlurmctldPort") or str(DEFAULT_CTLD_PORT)).split("-")[0])
    return host, addr, port


def ctld_settings(cfg: ClusterConfig, conf_path: Path) -> CtldSettings:
    base = conf_path.resolve().parent
    host, addr, port = controller_address(cfg)
    params = dict(p.partition("=")[::2] for p in (other(cfg, "AuthAltParameters") or "").split(",") if p)
    key = Path(params.get("jwt_key", "jwt_hs256.key"))
    state = Path(cfg.state_save_location)
    operators = {u for u in ((other(cfg, "SlurmUser") or ""),) if u}
    return CtldSettings(host, addr, port, key if key.is_absolute() else base / key,
                        state if state.is_absolute() else base / state, operators)
