"""A real PostgreSQL server for the production-instance tests: $RAGPIPE_TEST_POSTGRES_URL, or a throwaway cluster from
the server binaries (skips without them, fails when RAGPIPE_REQUIRE_POSTGRES=1), as a module-scoped fixture `pg`."""

from __future__ import annotations

import contextlib
import glob
import os
import secrets
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator
from urllib.parse import unquote, urlsplit

import pytest
from conftest import ROOT
from devkit import free_port

URL_ENV, REQUIRE_ENV = "RAGPIPE_TEST_POSTGRES_URL", "RAGPIPE_REQUIRE_POSTGRES"
VARIANT = ROOT / "deploy" / "postgres" / "dagster.yaml"


@dataclass(frozen=True)
class PgServer:
    host: str
    port: int
    user: str
    password: str
    db: str

    def env(self) -> dict[str, str]:
        """What deploy/postgres/dagster.yaml reads."""
        return {
            "RAGPIPE_PG_HOST": self.host,
            "RAGPIPE_PG_PORT": str(self.port),
            "RAGPIPE_PG_USER": self.user,
            "RAGPIPE_PG_PASSWORD": self.password,
            "RAGPIPE_PG_DB": self.db,
        }

    def connect(self, db: str | None = None) -> Any:
        import psycopg2

        return psycopg2.connect(
            host=self.host,
            port=self.port,
            user=self.user,
            password=self.password,
            dbname=db or self.db,
            connect_timeout=10,
        )

    def query(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        con = self.connect()
        try:
            with con.cursor() as cur:
                cur.execute(sql, params)
                return cur.fetchall()
        finally:
            con.close()


def _unavailable(reason: str) -> None:
    if os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(f"{reason} ({REQUIRE_ENV}=1: PostgreSQL is required here)")
    pytest.skip(reason)


def pg_binaries() -> dict[str, Path] | None:
    """initdb and pg_ctl: from PATH, else the newest /usr/lib/postgresql/<version>/bin (Debian's layout)."""
    on_path = {name: shutil.which(name) for name in ("initdb", "pg_ctl")}
    if all(on_path.values()):
        return {name: Path(p) for name, p in on_path.items() if p}

    def version(bindir: str) -> tuple[int, ...]:
        v = Path(bindir).parent.name
        return tuple(int(x) for x in v.split(".") if x.isdigit())

    for bindir in sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=version, reverse=True):
        found = {name: Path(bindir) / name for name in ("initdb", "pg_ctl")}
        if all(os.access(p, os.X_OK) for p in found.values()):
            return found
    return None


def _admin_sql(server: PgServer, *statements: str) -> None:
    con = server.connect()
    con.autocommit = True  # CREATE/DROP DATABASE cannot run in a transaction
    try:
        with con.cursor() as cur:
            for sql in statements:
                cur.execute(sql)
    finally:
        con.close()


@contextlib.contextmanager
def external_server(url: str) -> Iterator[PgServer]:
    """A fresh database on the server of $RAGPIPE_TEST_POSTGRES_URL, dropped afterwards."""
    u = urlsplit(url)
    admin = PgServer(
        u.hostname or "127.0.0.1",
        u.port or 5432,
        unquote(u.username or ""),
        unquote(u.password or ""),
        unquote(u.path.lstrip("/")) or "postgres",
    )
    db = f"ragpipe_test_{secrets.token_hex(4)}"
    _admin_sql(admin, f'CREATE DATABASE "{db}"')
    try:
        yield PgServer(admin.host, admin.port, admin.user, admin.password, db)
    finally:
        _admin_sql(admin, f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')


@contextlib.contextmanager
def throwaway_cluster(bins: dict[str, Path]) -> Iterator[PgServer]:
    """initdb + pg_ctl in a temporary directory: TCP on 127.0.0.1 with password (SCRAM) authentication, the unix
    socket inside the directory. PostgreSQL refuses to run as root: as root, the cluster belongs to `postgres`."""
    as_user: list[str] = []
    owner = None
    if os.geteuid() == 0:
        import pwd

        try:
            owner = pwd.getpwnam("postgres")
        except KeyError:
            _unavailable("running as root and there is no `postgres` user to own a PostgreSQL cluster")
        runuser = shutil.which("runuser")
        if runuser is None:
            _unavailable("running as root and runuser(1) is missing: cannot start PostgreSQL as `postgres`")
        as_user = [runuser, "-u", "postgres", "--"]

    base = Path(tempfile.mkdtemp(prefix="ragpipe-pg-"))  # under /tmp: reachable by `postgres`, unlike pytest's tmp
    data, log, pwfile = base / "data", base / "server.log", base / "pw"
    admin_password = secrets.token_urlsafe(16)
    pwfile.write_text(admin_password + "\n", encoding="utf-8")
    if owner is not None:
        os.chown(base, owner.pw_uid, owner.pw_gid)
        os.chown(pwfile, owner.pw_uid, owner.pw_gid)

    def run(*cmd: str | Path) -> None:
        proc = subprocess.run(
            [*as_user, *map(str, cmd)], cwd=base, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120
        )
        if proc.returncode != 0:
            server_log = log.read_text(errors="replace") if log.exists() else ""
            pytest.fail(
                f"{' '.join(map(str, cmd))} exited with {proc.returncode}:\n{proc.stdout}\n{proc.stderr}\n{server_log}"
            )

    port = free_port()
    started = False
    try:
        run(
            bins["initdb"],
            "-D",
            data,
            "-U",
            "ragpipe_admin",
            f"--pwfile={pwfile}",
            "--auth=scram-sha-256",
            "-E",
            "UTF8",
            "--locale=C",
            "--no-sync",
        )
        options = f"-c listen_addresses=127.0.0.1 -p {port} -c unix_socket_directories={base} -c fsync=off"
        run(bins["pg_ctl"], "-D", data, "-l", log, "-o", options, "-w", "-t", "60", "start")
        started = True
        admin = PgServer("127.0.0.1", port, "ragpipe_admin", admin_password, "postgres")
        # Dagster's own role and database, as a deployment would have them: not a superuser, password auth.
        password = secrets.token_urlsafe(16)
        _admin_sql(admin, f"CREATE ROLE ragpipe LOGIN PASSWORD '{password}'", "CREATE DATABASE ragpipe OWNER ragpipe")
        yield PgServer("127.0.0.1", port, "ragpipe", password, "ragpipe")
    finally:
        if started:
            subprocess.run(
                [*as_user, str(bins["pg_ctl"]), "-D", str(data), "-m", "immediate", "-w", "stop"],
                cwd=base,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=60,
            )
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="module")
def pg() -> Iterator[PgServer]:
    try:
        import psycopg2  # noqa: F401  (dagster-postgres depends on it)
    except ImportError:
        _unavailable("psycopg2 is not installed")
    url = os.environ.get(URL_ENV)
    if url:
        with external_server(url) as server:
            yield server
        return
    bins = pg_binaries()
    if bins is None:
        _unavailable(
            "no PostgreSQL server binaries (initdb, pg_ctl) on PATH or in /usr/lib/postgresql/*/bin; "
            f"install the `postgresql` package or set {URL_ENV}"
        )
    with throwaway_cluster(bins) as server:
        yield server
