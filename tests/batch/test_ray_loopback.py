"""The local Ray cluster ``--executor ray`` starts for a run listens on loopback only, with no
dashboard: checked on a real cluster, by the listening sockets of every process it started."""

from __future__ import annotations

import ipaddress
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("ray")
pytestmark = pytest.mark.slow

_DRIVER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from scriptorium import Engine, RunRequest
    from scriptorium.batch.ray import RayExecutor

    root = Path(sys.argv[1])
    (root / "prompts").mkdir(parents=True)
    (root / "profiles").mkdir()
    (root / "prompts" / "hello.prompt.md").write_text("---\\nprofile: canned\\n---\\nHello!\\n")
    (root / "profiles" / "canned.yaml").write_text("provider: fake\\noptions: {responses: [hi]}\\n")
    results = Engine(root).run_many(
        [RunRequest(prompt_id="hello")], concurrency=1, executor=RayExecutor(num_cpus=1)
    )
    print("ran", type(results[0]).__name__, flush=True)
    sys.stdin.read()  # the cluster stays up until the test has looked at it
    """
)


def _descendants(pid: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        parent = int(stat.rpartition(")")[2].split()[1])
        children.setdefault(parent, []).append(int(entry))
    found, todo = {pid}, [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def _socket_inodes(pids: set[int]) -> set[str]:
    inodes: set[str] = set()
    for pid in pids:
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
                if target.startswith("socket:["):
                    inodes.add(target[8:-1])
        except OSError:
            continue
    return inodes


def _address(hex_address: str, v6: bool) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    raw = bytes.fromhex(hex_address)
    if not v6:
        return ipaddress.IPv4Address(raw[::-1])
    # /proc/net/tcp6 writes each 32-bit word in host (little-endian) order.
    words = b"".join(raw[i : i + 4][::-1] for i in range(0, 16, 4))
    return ipaddress.IPv6Address(words)


def _listening(inodes: set[str]) -> list[tuple[str, int]]:
    found: list[tuple[str, int]] = []
    for table, v6 in (("/proc/net/tcp", False), ("/proc/net/tcp6", True)):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            local, state, inode = fields[1], fields[3], fields[9]
            if state != "0A" or inode not in inodes:  # 0A: LISTEN
                continue
            host, port = local.split(":")
            found.append((str(_address(host, v6)), int(port, 16)))
    return found


def _loopback(host: str) -> bool:
    address = ipaddress.ip_address(host)
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_loopback


def test_the_local_cluster_listens_on_loopback_only_and_has_no_dashboard(tmp_path: Path) -> None:
    env = {**os.environ, "RAY_ADDRESS": ""}
    env.pop("RAY_ADDRESS")
    driver = subprocess.Popen(
        [sys.executable, "-c", _DRIVER, str(tmp_path / "project")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert driver.stdout is not None
        assert driver.stdout.readline().strip() == "ran RunResult"
        processes = _descendants(driver.pid)
        sockets = _listening(_socket_inodes(processes))
        # The GCS, the raylet and a worker at least: the cluster really is up.
        assert len(processes) >= 3, processes
        assert len(sockets) >= 3, sockets
        assert [s for s in sockets if not _loopback(s[0])] == []
        assert 8265 not in {port for _, port in sockets}  # no dashboard
    finally:
        assert driver.stdin is not None
        assert driver.stdout is not None
        driver.stdin.close()
        driver.wait(timeout=60)
        driver.stdout.close()
