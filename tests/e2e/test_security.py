"""Security: the API key stays in the environment, `ragpipe sql` cannot write, and the corpus scan never leaves the corpus.

The key test runs a full `ragpipe ci` with the OpenAI-compatible answerer against tests/openai_server.py (a real HTTP
server process) with a sentinel key, then looks for the sentinel everywhere a run leaves text: its output, the
Dagster event log and materialization metadata read back from the instance, every DuckDB table and view, and the
bytes of every file in the project (DuckDB, LanceDB, Dagster storage, reports).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import uuid
from pathlib import Path

import duckdb
import pytest
from conftest import Project, make_project
from faultkit import OpenAIServer, copy_project, evaluated_base, files_under, python_env, ragpipe_cli

from ragpipe.cli import main

pytestmark = [pytest.mark.slow, pytest.mark.dagster]

SENTINEL = f"sk-SENTINEL-9f3a-{uuid.uuid4().hex}"
KEY_ENV = "RAGPIPE_TEST_KEY"  # conftest's [answerer.openai].api_key_env


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return evaluated_base(tmp_path_factory)


@pytest.fixture(scope="module")
def keyed_run(base: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Project, int, str, list[dict]]:
    """`ragpipe ci` with the openai answerer and the sentinel key; one test's answer is a 401 (the error path)."""
    p = copy_project(base, tmp_path_factory.mktemp("keyed") / "proj")
    lines = []
    for i, line in enumerate(p.golden.read_text().splitlines()):
        test = json.loads(line)
        if i == 0:
            test["question"] += " [[401]]"
        lines.append(json.dumps(test))
    p.golden.write_text("\n".join(lines) + "\n")
    reports = p.root / "reports"
    reports.mkdir()
    with OpenAIServer() as server:
        p.configure(answerer="openai", base_url=server.base_url)
        env = python_env(**{KEY_ENV: SENTINEL}, GITHUB_STEP_SUMMARY=str(reports / "step-summary.md"))
        code, out = ragpipe_cli(
            p.root, "ci", "--junit", str(reports / "junit.xml"), "--markdown", str(reports / "summary.md"), env=env
        ).finish(600)
        requests = server.requests()
    assert code in (0, 1) and "GATE:" in out, out[-4000:]
    return p, code, out, requests


def test_the_key_was_really_sent(keyed_run: tuple) -> None:
    p, _, out, requests = keyed_run
    n_tests = len(p.golden.read_text().splitlines())
    assert len(requests) >= n_tests
    assert {r["auth"] for r in requests} == {f"Bearer {SENTINEL}"}
    assert "HTTP 401" in out and f"${KEY_ENV}" in out  # the error names the variable, never its value


def test_the_key_is_not_in_the_output(keyed_run: tuple) -> None:
    _, _, out, _ = keyed_run
    assert SENTINEL not in out
    assert SENTINEL[:16] not in out  # not even a prefix of it


def test_the_key_is_not_in_the_dagster_event_log_or_metadata(keyed_run: tuple, monkeypatch: pytest.MonkeyPatch) -> None:
    import dagster as dg
    from dagster import serialize_value

    from ragpipe.assets.runner import project_instance

    p, _, _, _ = keyed_run
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    instance = project_instance(p.root)  # the instance the run wrote, through the project's dagster.yaml
    runs = instance.get_runs()
    assert runs
    n_events = n_materializations = 0
    for run in runs:
        assert SENTINEL not in serialize_value(run)  # tags, run config
        for entry in instance.all_logs(run.run_id):
            n_events += 1
            assert SENTINEL not in serialize_value(entry), entry.dagster_event_type
    for key in instance.get_asset_keys():
        for record in instance.fetch_materializations(key, limit=1000).records:
            n_materializations += 1
            text = serialize_value(record.asset_materialization)
            assert SENTINEL not in text, key
    assert n_events > 50 and n_materializations >= 9
    answers = [r for r in instance.fetch_materializations(dg.AssetKey("answers"), limit=1).records]
    assert "openai-compatible" in str(answers[0].asset_materialization.metadata["answerer"].value)


def test_the_key_is_in_no_duckdb_table(keyed_run: tuple) -> None:
    p, _, _, _ = keyed_run
    con = duckdb.connect(str(p.settings().duckdb_path), read_only=True)
    try:
        names = [r[0] for r in con.execute("SELECT table_name FROM information_schema.tables ORDER BY 1").fetchall()]
        assert {"answers", "eval_runs", "verdicts", "stage_runs", "documents"} <= set(names)
        for name in names:
            dump = repr(con.execute(f'SELECT * FROM "{name}"').fetchall())
            assert SENTINEL not in dump, name
        answerer = con.execute("SELECT answerer FROM latest_eval_run").fetchone()[0]
        assert KEY_ENV in answerer and SENTINEL not in answerer  # the variable's name is stored, never its value
    finally:
        con.close()


def test_the_key_is_in_no_file_of_the_project(keyed_run: tuple) -> None:
    p, _, _, _ = keyed_run
    needle = SENTINEL.encode()
    scanned = 0
    for f in files_under(p.root):  # DuckDB and its WAL, LanceDB tables, Dagster storage and logs, reports
        assert needle not in f.read_bytes(), f
        scanned += 1
    lance = [f for f in files_under(Path(p.settings().lancedb_uri))]
    assert lance and scanned > len(lance)
    assert (p.root / "reports" / "junit.xml").is_file() and (p.root / "reports" / "step-summary.md").is_file()


# -- ragpipe sql cannot write -----------------------------------------------------------------------------------------


def test_sql_refuses_every_kind_of_write(base: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = copy_project(base, tmp_path / "proj")
    db = p.settings().duckdb_path
    other = tmp_path / "other.duckdb"
    con = duckdb.connect(str(other))
    con.execute("CREATE TABLE t (a INTEGER)")
    con.close()
    before = hashlib.sha256(db.read_bytes()).hexdigest(), hashlib.sha256(other.read_bytes()).hexdigest()
    counts = p.sql("SELECT (SELECT count(*) FROM documents), (SELECT count(*) FROM verdicts)")
    statements = [
        "DELETE FROM verdicts",
        "DROP TABLE documents",
        "INSERT INTO golden_tests SELECT * FROM golden_tests",
        "UPDATE documents SET text = ''",
        "CREATE TABLE x (a INTEGER)",
        "SELECT 1; DELETE FROM chunks",
        f"COPY documents TO '{tmp_path / 'dump.csv'}'",
        f"EXPORT DATABASE '{tmp_path / 'export'}'",
        f"ATTACH '{other}' AS o (READ_WRITE); INSERT INTO o.t VALUES (1)",
        f"ATTACH '{tmp_path / 'new.duckdb'}' AS n",
        "SET enable_external_access = true",
        "SELECT * FROM read_text('/etc/hostname')",
    ]
    for q in statements:
        code = main(["--settings", str(p.settings_file), "sql", q])
        err = capsys.readouterr().err
        assert code != 0, q
        assert "Traceback" not in err, err
    assert not (tmp_path / "dump.csv").exists() and not (tmp_path / "export").exists()
    assert not (tmp_path / "new.duckdb").exists()
    assert (hashlib.sha256(db.read_bytes()).hexdigest(), hashlib.sha256(other.read_bytes()).hexdigest()) == before
    assert p.sql("SELECT (SELECT count(*) FROM documents), (SELECT count(*) FROM verdicts)") == counts
    # reads still work, views included
    assert (
        main(
            ["--settings", str(p.settings_file), "sql", "--format", "json", "SELECT count(*) AS n FROM latest_verdicts"]
        )
        == 0
    )
    assert json.loads(capsys.readouterr().out)[0]["n"] > 0


# -- the corpus scan never leaves the corpus --------------------------------------------------------------------------


def test_corpus_scan_does_not_follow_links_out_of_the_corpus(tmp_path: Path) -> None:
    p = make_project(tmp_path / "proj", with_golden=False)
    outside = tmp_path / "outside"
    (outside / "deep").mkdir(parents=True)
    secret = "TOP-SECRET-" + uuid.uuid4().hex
    (outside / "secret.md").write_text(f"# Secret\n\n{secret} lives outside the corpus.\n")
    (outside / "deep" / "more.md").write_text(f"# More\n\n{secret} again.\n")
    c = p.corpus
    shutil.rmtree(c)
    (c / "inner").mkdir(parents=True)
    (c / "inner" / "ok.md").write_text("# Inside\n\nAn ordinary document inside the corpus.\n")
    (c / "alias.md").symlink_to("inner/ok.md")  # a link that stays inside: followed
    (c / "file-out.md").symlink_to(outside / "secret.md")  # absolute link to a file outside
    (c / "rel-out.md").symlink_to(Path("..") / ".." / "outside" / "secret.md")  # relative "../" link out
    (c / "dir-out").symlink_to(outside, target_is_directory=True)  # a directory outside
    (c / "up").symlink_to("..", target_is_directory=True)  # the corpus's parent (and the corpus within it)
    (c / "inner" / "hop.md").symlink_to(outside / "secret.md")
    (c / "chain.md").symlink_to("inner/hop.md")  # inside -> inside -> outside
    (c / "etc.md").symlink_to("/etc/hostname")
    (c / "up%2f..%2fsecret.md").write_text("# Odd name\n\nA literal file name, not a path.\n")

    p.materialize(["corpus", "documents", "chunks"])
    docs = {r[0]: r[1] for r in p.sql("SELECT doc_id, text FROM documents")}
    assert set(docs) == {"inner/ok.md", "alias.md", "up%2f..%2fsecret.md"}
    assert not any(secret in t for t in docs.values())
    assert not any(secret in r[0] for r in p.sql("SELECT text FROM chunks"))
    errors = {r[0]: r[1:] for r in p.sql("SELECT path, stage, error_class, message FROM ingest_errors")}
    escaping = {"file-out.md", "rel-out.md", "dir-out", "up", "inner/hop.md", "chain.md", "etc.md"}
    assert set(errors) == escaping, errors
    for path, (stage, cls, message) in errors.items():
        assert stage == "corpus" and cls == "SymlinkOutsideCorpus" and "not followed" in message, (path, message)
    for (path,) in p.sql("SELECT path FROM corpus_files"):
        assert not path.startswith("/") and ".." not in Path(path).parts
        assert (p.corpus / path).resolve().is_relative_to(p.corpus.resolve()), path
    assert os.path.isfile(outside / "secret.md")  # nothing outside was touched
