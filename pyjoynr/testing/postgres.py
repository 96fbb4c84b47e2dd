"""A real PostgreSQL server for tests.

``PostgresServer`` creates a throwaway cluster (``initdb``) in a fresh directory under /tmp and
runs it with ``pg_ctl`` on a free loopback port, with durability switched off for speed
(``fsync``, ``synchronous_commit``, ``full_page_writes``). ``stop()`` and ``start()`` again keep
the port and the data directory, so a test can take the database away mid-run and bring it back
with its data; leaving the ``async with`` block stops the server and deletes the directory.

PostgreSQL refuses to run as root: as root, ``initdb``, ``pg_ctl`` and the server run as the
``postgres`` user (``runuser``) in a directory it owns. The directory is made with
``tempfile.mkdtemp`` under /tmp rather than in pytest's ``tmp_path``, whose parents (e.g.
/tmp/pytest-of-root, mode 0700) the postgres user cannot traverse. A missing PostgreSQL
installation fails the test with the reason.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path
from urllib.parse import quote

import asyncpg

from pyjoynr.testing.cluster import free_port

POSTGRES_ROOT = Path("/usr/lib/postgresql")
SUPERUSER = "postgres"
# speed over durability: a test database never has to survive a machine crash
SETTINGS = {
    "listen_addresses": "127.0.0.1",
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
}


def find_bin_dir() -> Path:
    """``/usr/lib/postgresql/<major>/bin`` of the highest major version installed."""
    candidates: list[tuple[int, Path]] = []
    if POSTGRES_ROOT.is_dir():
        for entry in POSTGRES_ROOT.iterdir():
            bin_dir = entry / "bin"
            if entry.name.isdigit() and all((bin_dir / tool).exists()
                                            for tool in ("initdb", "pg_ctl", "postgres")):
                candidates.append((int(entry.name), bin_dir))
    if not candidates:
        raise RuntimeError(f"PostgreSQL is not installed (no {POSTGRES_ROOT}/<major>/bin with "
                           "initdb, pg_ctl and postgres); install it (apt-get install -y "
                           "postgresql); bin/test installs it when run as root")
    return max(candidates)[1]


class PostgresServer:
    """A throwaway PostgreSQL server on ``127.0.0.1:port``; superuser ``postgres``, trust auth."""

    def __init__(self, port: int | None = None) -> None:
        self.port = port or free_port()
        self.base: Path | None = None  # made by the first start(): socket, log, data/
        self.running = False
        self._bin_dir: Path | None = None
        self._as_postgres = os.geteuid() == 0

    @property
    def dsn(self) -> str:
        return self.dsn_for("postgres")

    def dsn_for(self, database: str) -> str:
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/{quote(database, safe='')}"

    @property
    def data_dir(self) -> Path:
        if self.base is None:
            raise RuntimeError("the PostgreSQL server has not been started")
        return self.base / "data"

    @property
    def log(self) -> Path:
        if self.base is None:
            raise RuntimeError("the PostgreSQL server has not been started")
        return self.base / "server.log"

    def log_tail(self, chars: int = 3000) -> str:
        try:
            return self.log.read_text(errors="replace")[-chars:]
        except (OSError, RuntimeError) as e:
            return f"(no server log: {e})"

    # -- synchronous helpers: they block, so they run in a thread ----------------------------

    def _tool(self, name: str) -> str:
        if self._bin_dir is None:
            self._bin_dir = find_bin_dir()
        return str(self._bin_dir / name)

    def _run(self, args: list[str], timeout_s: float) -> subprocess.CompletedProcess[str]:
        """Run a PostgreSQL tool, as the postgres user when we are root; bounded."""
        command = ["runuser", "-u", SUPERUSER, "--", *args] if self._as_postgres else args
        env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
        return subprocess.run(command, capture_output=True, text=True, timeout=timeout_s,
                              stdin=subprocess.DEVNULL, env=env, cwd=self.base, check=False)

    def _init(self, timeout_s: float) -> None:
        initdb = self._tool("initdb")  # fails before anything is created if not installed
        base = Path(tempfile.mkdtemp(prefix="pg-", dir="/tmp"))
        self.base = base
        base.chmod(0o755)
        if self._as_postgres:
            try:
                user = pwd.getpwnam(SUPERUSER)
            except KeyError:
                raise RuntimeError(f"running as root, PostgreSQL needs the {SUPERUSER!r} user "
                                   "(created by apt-get install postgresql)") from None
            os.chown(base, user.pw_uid, user.pw_gid)
        result = self._run([initdb, "-D", str(self.data_dir), "-A", "trust", "-U", SUPERUSER,
                            "-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions"],
                           timeout_s)
        if result.returncode != 0:
            raise RuntimeError(f"initdb failed with {result.returncode}: "
                               f"{(result.stdout + result.stderr)[-3000:]}")

    def _pg_ctl_start(self, timeout_s: float) -> None:
        options = " ".join([f"-p {self.port}", f"-k {self.base}",
                            *(f"-c {key}={value}" for key, value in SETTINGS.items())])
        try:
            result = self._run([self._tool("pg_ctl"), "-D", str(self.data_dir), "-l",
                                str(self.log), "-o", options, "-w", "-t",
                                str(max(1, int(timeout_s))), "start"], timeout_s + 5)
        except subprocess.TimeoutExpired:
            self._pg_ctl_stop("immediate", 10)
            raise RuntimeError(f"pg_ctl start did not return within {timeout_s} s; server log: "
                               f"{self.log_tail()}") from None
        if result.returncode != 0:
            self._pg_ctl_stop("immediate", 10)  # it may have come up late: leave nothing behind
            raise RuntimeError(f"PostgreSQL did not start on port {self.port} "
                               f"(pg_ctl exited with {result.returncode}: "
                               f"{(result.stdout + result.stderr).strip()}); server log: "
                               f"{self.log_tail()}")

    def _pg_ctl_stop(self, mode: str, timeout_s: float) -> bool:
        """True if no server runs on the data directory any more."""
        with contextlib.suppress(subprocess.TimeoutExpired):
            result = self._run([self._tool("pg_ctl"), "-D", str(self.data_dir), "-m", mode,
                                "-w", "-t", str(max(1, int(timeout_s))), "stop"],
                               timeout_s + 5)
            # 0: stopped; otherwise it may not have been running at all (no postmaster.pid)
            return result.returncode == 0 or not (self.data_dir / "postmaster.pid").exists()
        return False

    def _stop(self, timeout_s: float) -> None:
        if self._pg_ctl_stop("fast", timeout_s):
            return
        if not self._pg_ctl_stop("immediate", 10):
            raise RuntimeError(f"PostgreSQL on port {self.port} did not stop; server log: "
                               f"{self.log_tail()}")

    # -- the test-facing API -----------------------------------------------------------------

    async def start(self, timeout_s: float = 30.0) -> None:
        """Create the cluster on the first call; then run the server, ready for connections."""
        if self.running:
            return
        if self.base is None:
            try:
                await asyncio.to_thread(self._init, timeout_s)
            except BaseException:
                await self.close()
                raise
        await asyncio.to_thread(self._pg_ctl_start, timeout_s)
        self.running = True

    async def stop(self, timeout_s: float = 30.0) -> None:
        """Shut down (``-m fast``) keeping port and data: ``start()`` brings it back."""
        if not self.running or self.base is None:
            return
        await asyncio.to_thread(self._stop, timeout_s)
        self.running = False

    async def close(self) -> None:
        """Stop the server and delete its directory."""
        try:
            await self.stop()
        finally:
            base, self.base = self.base, None
            if base is not None:
                await asyncio.to_thread(shutil.rmtree, base, True)

    async def create_database(self, name: str) -> str:
        """Create database ``name``; its DSN."""
        connection = await asyncpg.connect(self.dsn, timeout=10)
        try:
            await connection.execute(f'CREATE DATABASE "{name.replace(chr(34), chr(34) * 2)}"')
        finally:
            await connection.close()
        return self.dsn_for(name)

    async def __aenter__(self) -> PostgresServer:
        try:
            await self.start()
        except BaseException:
            await self.close()  # __aexit__ does not run when __aenter__ fails
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
