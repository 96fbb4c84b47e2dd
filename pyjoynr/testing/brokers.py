"""Real MQTT brokers for tests: mosquitto processes and the embedded amqtt broker.

``Mosquitto`` runs ``/usr/sbin/mosquitto`` on a free loopback port with persistence in a
temporary directory, configured as docs/operating.md ("Brokers") asks of a production broker: a stop
(SIGTERM: mosquitto saves its state) or a crash (:meth:`Mosquitto.kill`, SIGKILL) and a start on
the same port keep persistent sessions and their queued QoS 1 messages. mosquitto writes its
state only as a snapshot (``persistence_file``), on exit and per ``autosave_interval``; with
``autosave_on_changes true`` and ``autosave_interval 1`` it writes one after every change that
it counts (a client connects, subscribes or unsubscribes, a QoS 1 message is queued for a client
that cannot take it now, a retained message). ``crash_safe=False`` leaves mosquitto's default (a
snapshot every 30 minutes and on exit): a crash loses every session since the last one. A
missing mosquitto fails the test with the reason.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import signal
import subprocess
from pathlib import Path

from pyjoynr.testing.cluster import free_port
from pyjoynr.transports.mqtt.broker import DEFAULT_MAX_PACKET_BYTES

MOSQUITTO = shutil.which("mosquitto") or "/usr/sbin/mosquitto"
#: mosquitto's max_packet_size: the embedded broker's default limit (4 MiB + 5 KiB)
MAX_PACKET_BYTES = DEFAULT_MAX_PACKET_BYTES


class Mosquitto:
    """``persistence``: keep sessions and queued messages over a restart; ``crash_safe``: over
    a crash too (a snapshot after every change, see above). ``tls``: (certificate, key) PEM
    files for a TLS listener. ``users``: name -> password; then only they get in.
    ``log_packets``: log every packet (``Received PUBLISH from <client> (d0, q1, r0, m1,
    ...)``) to :attr:`log`. ``max_packet_size``: the largest packet the broker takes (bytes;
    it tells MQTT 5 clients in its CONNACK and disconnects a client sending a larger one).
    ``clientid_from_username`` (with ``users``): a client's id is its user name
    (``use_username_as_clientid``), as docs/operating.md ("Brokers") asks of a production
    broker: no client can take another's session."""

    def __init__(self, directory: Path, port: int | None = None, *, persistence: bool = True,
                 tls: tuple[Path, Path] | None = None,
                 users: dict[str, str] | None = None, crash_safe: bool = True,
                 log_packets: bool = False, max_packet_size: int = MAX_PACKET_BYTES,
                 clientid_from_username: bool = False) -> None:
        self.directory = directory
        self.port = port or free_port()
        self.tls = tls is not None
        self.process: subprocess.Popen[bytes] | None = None
        directory.mkdir(parents=True, exist_ok=True)
        self.config = directory / "mosquitto.conf"
        self.log = directory / "mosquitto.log"
        lines = [
            f"listener {self.port} 127.0.0.1",
            # as root, mosquitto would switch to the mosquitto user, which cannot write the
            # persistence file here (no effect when not run as root)
            "user root",
            # QoS 1 messages kept for one client that cannot take them now (mosquitto's default
            # is 1000; more are dropped without a word to the publisher)
            "max_queued_messages 100000",
            "max_inflight_messages 0",
            "set_tcp_nodelay true",  # small request/reply packets go out at once
            # the documented production setting: no packet larger than the cluster
            # controllers' [mqtt] max_message_bytes (default) plus room for the topic and
            # properties; a client sending one is disconnected (all protocol versions)
            f"max_packet_size {max_packet_size}",
            "log_dest stderr",
            "log_type error",
            "log_type warning",
            "log_type notice",  # connects, disconnects, keep-alive timeouts, takeovers
        ]
        if log_packets:  # every packet in and out, with its flags and packet id
            lines.append("log_type debug")
        if persistence:
            lines += ["persistence true", f"persistence_location {directory}/"]
            if crash_safe:  # a snapshot after every change (and on exit)
                lines += ["autosave_on_changes true", "autosave_interval 1"]
        if tls is not None:
            lines += [f"certfile {tls[0]}", f"keyfile {tls[1]}"]
        if users:
            passwords = directory / "passwords"
            passwords.write_text("".join(f"{u}:{p}\n" for u, p in users.items()))
            subprocess.run(["mosquitto_passwd", "-U", str(passwords)], check=True,
                           capture_output=True)
            lines += ["allow_anonymous false", f"password_file {passwords}"]
            if clientid_from_username:
                lines.append("use_username_as_clientid true")
        else:
            lines.append("allow_anonymous true")
        self.config.write_text("\n".join(lines) + "\n")

    @property
    def url(self) -> str:
        return f"{'mqtts' if self.tls else 'mqtt'}://127.0.0.1:{self.port}"

    def _spawn(self) -> subprocess.Popen[bytes]:
        if not Path(MOSQUITTO).exists():
            raise RuntimeError("mosquitto is not installed (apt-get install -y mosquitto); "
                               "bin/test installs it when run as root")
        with open(self.log, "ab") as log:
            return subprocess.Popen([MOSQUITTO, "-c", str(self.config)], stdout=log,
                                    stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

    async def start(self, timeout_s: float = 10.0) -> None:
        self.process = self._spawn()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"mosquitto exited with {self.process.returncode}: "
                                   f"{self.log.read_text(errors='replace')[-2000:]}")
            with contextlib.suppress(OSError):
                _, writer = await asyncio.open_connection("127.0.0.1", self.port)
                writer.close()
                with contextlib.suppress(OSError):
                    await writer.wait_closed()
                return
            if loop.time() > deadline:
                raise RuntimeError(f"mosquitto did not listen on {self.port} within "
                                   f"{timeout_s} s")
            await asyncio.sleep(0.02)

    async def stop(self, timeout_s: float = 10.0) -> None:
        """SIGTERM (mosquitto saves its persistent state) and wait for the exit."""
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGTERM)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while process.poll() is None:
            if loop.time() > deadline:
                process.kill()
                process.wait()
                break
            await asyncio.sleep(0.02)

    def snapshot_holds(self, needle: bytes) -> bool:
        """Whether mosquitto's last saved snapshot (``mosquitto.db``, replaced whole on each
        save) contains ``needle``: e.g. a queued message's payload. Its saves follow its
        acknowledgements, so a test that crashes the broker on purpose waits for this first."""
        try:
            return needle in (self.directory / "mosquitto.db").read_bytes()
        except FileNotFoundError:
            return False

    async def kill(self) -> None:
        """SIGKILL: a crash (mosquitto saves nothing) and wait for the exit."""
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        process.kill()
        await asyncio.to_thread(process.wait)

    async def __aenter__(self) -> Mosquitto:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()
