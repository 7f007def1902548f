"""Wireshark's dissector as a second opinion on a codec: bytes as one TCP stream to port 5672
(``text2pcap`` from a hex dump), read back by ``tshark``'s AMQP dissector as JSON.

tshark and text2pcap must be installed (``make setup`` installs Debian's ``tshark``, which
brings ``text2pcap`` in ``wireshark-common``): the tests that use them fail, never skip,
without them.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

__all__ = ["capture", "dissect", "run", "tool"]


def tool(name: str) -> str:
    found = shutil.which(name)
    assert found, f"{name} is not installed: make setup installs Debian's tshark, which brings it"
    return found


def run(*args: str | Path) -> str:
    done = subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"{args[0]} failed ({done.returncode}): {done.stderr}"
    return done.stdout


def capture(packets: list[bytes], where: Path) -> Path:
    """``packets`` as one TCP stream from a client to port 5672, one TCP segment each."""
    text = where / "frames.txt"
    with text.open("w") as out:
        for data in packets:
            for at in range(0, len(data), 16):
                out.write(f"{at:06x}  {data[at : at + 16].hex(' ')}\n")
            out.write("\n")
    pcap = where / "frames.pcap"
    run(tool("text2pcap"), "-q", "-T", "40000,5672", text, pcap)
    return pcap


def dissect(packets: list[bytes], where: Path) -> list[dict[str, Any]]:
    """tshark's layers of ``packets`` (read once, ``-T json``): the AMQP layer and tshark's
    malformed-packet layer, where a dissector's exception (a "dissector bug") is told."""
    output = run(
        tool("tshark"),
        "-r",
        capture(packets, where),
        "-d",
        "tcp.port==5672,amqp",
        "-T",
        "json",
        "--no-duplicate-keys",
        "-J",
        "amqp _ws.malformed",
    )
    layers = [p["_source"]["layers"] for p in json.loads(output)]
    assert len(layers) == len(packets), f"{len(packets)} packets, tshark read {len(layers)}"
    return layers
