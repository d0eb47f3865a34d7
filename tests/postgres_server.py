"""A throwaway PostgreSQL server on loopback for the gradebook tests.

Debian's `postgresql` package (`initdb` and `pg_ctl` under /usr/lib/postgresql/*/bin; `make
test` installs it as root, see tests/install_system_packages.sh): a new cluster in a temporary
folder, trust authentication, listening on 127.0.0.1 only at a port reserved for it
(tests/loopback.py), no fsync. As root it
runs as the `postgres` user, since the server refuses to run as root.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from loopback import reserved_port

DATABASE = "sdpa_gradebook"


def find_server_bin() -> Path | None:
    """The folder holding initdb and pg_ctl, newest version first; None when not installed."""
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin"),
                        key=lambda p: int(Path(p).parent.name) if Path(p).parent.name.isdigit()
                        else 0, reverse=True)
    on_path = shutil.which("pg_ctl")
    if on_path:
        candidates.append(str(Path(on_path).resolve().parent))
    for folder in candidates:
        if (Path(folder) / "initdb").is_file() and (Path(folder) / "pg_ctl").is_file():
            return Path(folder)
    return None


def why_unavailable() -> str | None:
    """Why no server can be started here, or None when one can."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return "the psycopg driver is not installed (pip install -e '.[postgres]')"
    if find_server_bin() is None:
        return ("no PostgreSQL server installed: `apt-get install -y postgresql` as root "
                "(tests/install_system_packages.sh, run by `make test`)")
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            return "running as root and there is no `postgres` user to run the server as"
    return None


@dataclass
class PostgresServer:
    bin: Path
    data: Path
    port: int
    user: str | None  # the OS user the server runs as (None: this one)

    @property
    def admin_url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def db_url(self, database: str = DATABASE) -> str:
        """nbgrader's `CourseDirectory.db_url` for a database on this server."""
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/{database}"

    def _run(self, *args: str) -> None:
        subprocess.run([str(self.bin / args[0]), *args[1:]], check=True, user=self.user,
                       capture_output=True, text=True, cwd=self.data.parent)

    def start(self) -> PostgresServer:
        self._run("initdb", "-D", str(self.data / "cluster"), "-U", "postgres", "-A", "trust",
                  "-E", "UTF8", "--no-sync")
        options = (f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.data} "
                   "-c fsync=off -c synchronous_commit=off -c full_page_writes=off")
        self._run("pg_ctl", "start", "-w", "-t", "60", "-D", str(self.data / "cluster"),
                  "-l", str(self.data / "server.log"), "-o", options)
        return self

    def create_database(self, database: str = DATABASE) -> str:
        """A new empty database (nbgrader needs it to exist); its db_url."""
        import psycopg

        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{database}"')
        return self.db_url(database)

    def stop(self) -> None:
        try:
            self._run("pg_ctl", "stop", "-m", "immediate", "-D", str(self.data / "cluster"))
        finally:
            shutil.rmtree(self.data, ignore_errors=True)


def start_server() -> PostgresServer:
    """A running server on 127.0.0.1; call `stop()` when done."""
    user = "postgres" if os.geteuid() == 0 else None
    data = Path(tempfile.mkdtemp(prefix="sdpa-postgres-"))  # not under root's private tmp
    if user is not None:
        entry = pwd.getpwnam(user)
        os.chown(data, entry.pw_uid, entry.pw_gid)
    with reserved_port() as port:
        server = PostgresServer(bin=find_server_bin(), data=data, port=port, user=user)
        try:
            return server.start()  # `pg_ctl start -w` returns once the server accepts
        except subprocess.CalledProcessError as err:
            log = data / "server.log"
            detail = log.read_text()[-2000:] if log.is_file() else ""
            server.stop()
            raise RuntimeError(f"PostgreSQL did not start: {err.stderr}\n{detail}") from err
