"""One Linux network namespace per node agent (root only), joined by a bridge.

The controller and the commands stay in the host namespace on the bridge's address; each
agent (and every process of its jobs) lives in its own namespace with its own address, so
traffic between nodes crosses a real (virtual) network that a test can cut and heal.
"""

from __future__ import annotations

import shutil
import subprocess


def _ip(*args: str, check: bool = True) -> None:
    subprocess.run(["ip", *args], check=check, capture_output=True)


def _forward_rule(bridge: str, op: str) -> None:
    """Let frames between nodes through the host's firewall: where a Docker engine runs, its
    FORWARD DROP policy also applies to bridged traffic (``op``: -I to add, -D to remove)."""
    if shutil.which("iptables"):
        subprocess.run(["iptables", op, "FORWARD", "-i", bridge, "-o", bridge, "-j", "ACCEPT"],
                       capture_output=True, check=False)


class Network:
    def __init__(self, tag: str, nodes: list[str], subnet: int | None = None):
        self.tag = tag
        self.nodes = nodes
        third = subnet if subnet is not None else (int(tag[-4:]) % 200) + 20 if tag[-4:].isdigit() else 77
        self.prefix = f"10.{third}.0"
        self.bridge = f"{tag}br"[:15]
        self.ctld_addr = f"{self.prefix}.1"

    def ns(self, node: str) -> str:
        return f"{self.tag}-{node}"

    def addr(self, node: str) -> str:
        return f"{self.prefix}.{self.nodes.index(node) + 2}"

    def _veth(self, node: str) -> tuple[str, str]:
        i = self.nodes.index(node)
        return f"{self.tag}h{i}"[:15], f"{self.tag}n{i}"[:15]

    def create(self) -> None:
        self.destroy()
        _ip("link", "add", self.bridge, "type", "bridge")
        _ip("addr", "add", f"{self.ctld_addr}/24", "dev", self.bridge)
        _ip("link", "set", self.bridge, "up")
        _forward_rule(self.bridge, "-I")
        for node in self.nodes:
            ns = self.ns(node)
            host_end, node_end = self._veth(node)
            _ip("netns", "add", ns)
            _ip("link", "add", host_end, "type", "veth", "peer", "name", node_end)
            _ip("link", "set", node_end, "netns", ns)
            _ip("link", "set", host_end, "master", self.bridge)
            _ip("link", "set", host_end, "up")
            _ip("-n", ns, "addr", "add", f"{self.addr(node)}/24", "dev", node_end)
            _ip("-n", ns, "link", "set", node_end, "up")
            _ip("-n", ns, "link", "set", "lo", "up")

    def cut(self, node: str) -> None:
        """Disconnect a node from the network (its processes keep running)."""
        _ip("link", "set", self._veth(node)[0], "down")

    def heal(self, node: str) -> None:
        _ip("link", "set", self._veth(node)[0], "up")

    def destroy(self) -> None:
        for node in self.nodes:
            _ip("link", "del", self._veth(node)[0], check=False)
            _ip("netns", "del", self.ns(node), check=False)
        _ip("link", "del", self.bridge, check=False)
        _forward_rule(self.bridge, "-D")
