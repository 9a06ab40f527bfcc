"""Pieces of the tool tested in-process: pylti1p3 fixes and the score policies."""

from __future__ import annotations

import datetime as dt
import hashlib
import json

import pytest
from sqlalchemy import func, select

from lti_service.config import Config
from lti_service.db import Attempt, Launch, Passback
from lti_service.gradebook.passback import score_to_send
from lti_service.lti.ags import scores_url
from lti_service.lti.tool_conf import DatabaseToolConf
from lti_service.platforms import add_platform
from lti_service.services import Services


@pytest.fixture
def services(tmp_path):
    return Services.from_config(Config(data_dir=tmp_path))


def test_each_tool_configuration_has_its_own_issuer_table(services):
    """pylti1p3 shares `issuers_relation_types` between all instances; ours must not."""
    first, second = DatabaseToolConf(services.platforms), DatabaseToolConf(services.platforms)
    first.set_iss_has_one_client("https://lms.example")
    assert first.issuers_relation_types is not second.issuers_relation_types
    assert second.issuers_relation_types == {}


def test_moodle_lineitem_urls_keep_their_query_after_scores():
    assert scores_url("https://moodle.example/mod/lti/services.php/2/lineitems/7/lineitem?type_id=3") == (
        "https://moodle.example/mod/lti/services.php/2/lineitems/7/lineitem/scores?type_id=3"
    )
    assert scores_url("https://canvas.example/api/lti/courses/1/line_items/5") == (
        "https://canvas.example/api/lti/courses/1/line_items/5/scores"
    )


@pytest.mark.parametrize(("policy", "expected"), [("best", 16.0), ("latest", 12.0)])
def test_score_policy_picks_the_attempt_to_send(tmp_path, policy, expected):
    services = Services.from_config(Config(data_dir=tmp_path, score_policy=policy))
    platform = add_platform(services.db, "https://lms.example", "c", ["d"], "a", "t", "j")
    key = dict(platform_id=platform.id, context_id="c1", resource_link_id="r1", user_id="u1", assignment_version_id=1)
    with services.db.session() as session:
        for minute, score in ((1, 10.0), (2, 16.0), (3, 12.0)):
            session.add(
                Attempt(**key, number=minute, filename="n.ipynb", notebook=b"{}", sha256=str(minute), status="graded",
                        score=score, max_score=16.0, graded_at=dt.datetime(2026, 1, 1, 0, minute))
            )  # fmt: skip
        session.add(Attempt(**key, number=4, filename="n.ipynb", notebook=b"{}", sha256="q", status="queued"))
    row = Passback(platform_id=platform.id, context_id="c1", resource_link_id="r1", lineitem_url="x", user_id="u1")
    assert score_to_send(services, row).score == expected


def test_removing_a_platform_keeps_student_data_unless_asked(services):
    from lti_service.platforms import remove_platform

    platform = add_platform(services.db, "https://lms.example", "c", ["d"], "a", "t", "j")
    with services.db.session() as session:
        session.add(Attempt(platform_id=platform.id, context_id="c", resource_link_id="r", user_id="u", number=1,
                            filename="n.ipynb", notebook=b"{}", sha256="x", assignment_version_id=1))  # fmt: skip
    with pytest.raises(ValueError, match="1 submitted attempts belong to it"):
        remove_platform(services.db, platform.id)
    assert remove_platform(services.db, platform.id, delete_data=True)
    with services.db.session() as session:
        assert session.scalar(select(func.count(Attempt.id))) == 0


LIS = "http://purl.imsglobal.org/vocab/lis/v2/"


@pytest.mark.parametrize(
    ("roles", "staff", "learner"),
    [
        ([f"{LIS}membership#Instructor"], True, False),
        ([f"{LIS}membership/Instructor#TeachingAssistant"], True, False),
        (["Instructor"], True, False),  # short context role names (Moodle's NRPS)
        (["ContentDeveloper"], True, False),
        ([f"{LIS}membership#Learner", f"{LIS}institution/person#Instructor"], False, True),
        ([f"{LIS}institution/person#Instructor", f"{LIS}system/person#Administrator"], False, False),
        ([f"{LIS}membership#Learner"], False, True),
        ([f"{LIS}membership/Learner#NonCreditLearner"], False, True),
        (["Learner"], False, True),
        ([f"{LIS}institution/person#Student"], False, False),
        (["Mentor", "urn:lti:role:ims/lis/Instructor", f"{LIS}membership#Instructorship"], False, False),
        # a sub-role is a kind of its principal role: LIS's Learner#Instructor is a learner, not staff
        ([f"{LIS}membership#Learner", f"{LIS}membership/Learner#Instructor"], False, True),
        ([f"{LIS}membership/Learner#Instructor"], False, True),
        ([f"{LIS}membership/Learner#Administrator", f"{LIS}membership/Mentor#ContentDeveloper"], False, True),
        ([f"{LIS}membership/Learner#TeachingAssistant"], False, True),
        (["TeachingAssistant", f"{LIS}membership#TeachingAssistant"], False, False),  # no such principal role
        ([f"{LIS}membership#Instructor\n"], True, False),  # stripped, as before
        ([f"{LIS}membership#Learner\nInstructor"], False, False),
        ("Instructor", False, False),  # not a list: nothing
    ],
)
def test_roles_are_read_in_every_form_lti_allows(roles, staff, learner):
    """Launches (is_staff) and rosters (is_learner) read roles in one place; an institution role gives no
    course role."""
    from lti_service.lti.nrps import is_learner
    from lti_service.views.launches import is_staff

    assert is_staff(Launch(roles=roles)) is staff
    assert is_learner({"user_id": "u", "roles": roles}) is learner


def test_settings_are_validated():
    with pytest.raises(ValueError, match="SCORE_POLICY"):
        Config(score_policy="average")


def test_migrations_build_exactly_the_models_schema(tmp_path):
    """A model change without its Alembic migration fails here (alembic check compares the two)."""
    from alembic import command

    from lti_service.migrate import alembic_config, upgrade

    url = f"sqlite:///{tmp_path / 'schema.db'}"
    upgrade(url)
    command.check(alembic_config(url))


def test_a_database_with_the_newest_schema_is_not_migrated_again(tmp_path, monkeypatch):
    """Every process of the tool starts by migrating: at the newest revision (alembic's own head) it returns
    without running Alembic; one revision behind, Alembic brings it up."""
    from alembic import command
    from alembic.script import ScriptDirectory

    from lti_service import migrate

    url = f"sqlite:///{tmp_path / 'schema.db'}"
    assert migrate.newest_revision() == ScriptDirectory.from_config(migrate.alembic_config(url)).get_current_head()
    assert migrate.current_revision(url) is None
    migrate.upgrade(url)
    assert migrate.current_revision(url) == migrate.newest_revision()
    calls = []
    monkeypatch.setattr(command, "upgrade", lambda *args: calls.append(args))
    migrate.upgrade(url)
    assert calls == []
    monkeypatch.undo()
    command.downgrade(migrate.alembic_config(url), "-1")
    migrate.upgrade(url)
    assert migrate.current_revision(url) == migrate.newest_revision()


def test_a_platform_or_deployment_added_elsewhere_is_found_at_once(services):
    """The CLI adds to the database; a running server's cached directory looks again when it finds nothing."""
    from lti_service.platforms import PlatformDirectory

    platforms, deployments = PlatformDirectory(services.db), PlatformDirectory(services.db)
    add_platform(services.db, "https://lms.example", "c1", ["d1"], "a", "t", "j")
    assert deployments.find("https://lms.example", "c1", "d1") is not None
    assert [p.issuer for p in platforms.all()] == ["https://lms.example"]  # both directories hold a copy now
    add_platform(services.db, "https://new.example", "c2", ["d1"], "a", "t", "j")
    add_platform(services.db, "https://lms.example", "c1", ["d2"], "a", "t", "j")
    assert platforms.find("https://new.example", "c2").client_id == "c2"
    assert deployments.find("https://lms.example", "c1", "d2") is not None


def test_unknown_issuers_cannot_make_every_lookup_read_the_database(services, monkeypatch):
    from lti_service import platforms

    directory = platforms.PlatformDirectory(services.db)
    directory.all()
    reads = []
    monkeypatch.setattr(platforms, "list_platforms", lambda db: reads.append(1) or [])
    for number in range(200):
        assert directory.find(f"https://unknown-{number}.example", None) is None
    assert len(reads) == 1  # one re-read per MISS_RELOAD_INTERVAL, however many unknown issuers


def test_invite_lifetimes_are_short_durations():
    from lti_service.lti.invites import parse_duration

    assert parse_duration("90s") == dt.timedelta(seconds=90) and parse_duration("2d") == dt.timedelta(days=2)
    for bad in ("soon", "0h", "1w", "-1h", "31d"):
        with pytest.raises(ValueError):
            parse_duration(bad)


@pytest.mark.parametrize(
    ("cell", "safe"),
    [
        ("=1+1", "'=1+1"), ("+33 6", "'+33 6"), ("-2", "'-2"), ("@SUM(A1)", "'@SUM(A1)"), ("\tx", "'\tx"),
        ("\rx", "'\rx"), ("Ada", "Ada"), ("a=b", "a=b"), ("", ""), (-2.5, -2.5), (16, 16), (None, None),
    ],
)  # fmt: skip
def test_csv_cells_that_a_spreadsheet_would_evaluate_are_quoted(cell, safe):
    from lti_service.views.downloads import spreadsheet_safe

    assert spreadsheet_safe(cell) == safe


@pytest.mark.parametrize(
    ("name", "header"),
    [
        ("decode.ipynb", "attachment; filename=\"decode.ipynb\"; filename*=UTF-8''decode.ipynb"),
        ('a"b;c\\d.csv', "attachment; filename=\"a_b_c_d.csv\"; filename*=UTF-8''a%22b%3Bc%5Cd.csv"),
        ("été 1.csv", "attachment; filename=\"_t__1.csv\"; filename*=UTF-8''%C3%A9t%C3%A9%201.csv"),
        ("../../x", "attachment; filename=\"_.._x\"; filename*=UTF-8''..%2F..%2Fx"),
    ],
)
def test_download_names_are_encoded_as_rfc_6266_says(name, header):
    from lti_service.views.downloads import attachment

    assert attachment(name) == header


def migrated(tmp_path, revision: str, platform: str, attempt: str, rows: list[dict], read: str) -> list:
    """A database at an older `revision` with one platform and the attempts `rows` (inserted by the SQL
    `attempt`), migrated to the newest: what the query `read` then finds."""
    from alembic import command
    from sqlalchemy import create_engine, text

    from lti_service.migrate import alembic_config, upgrade

    url = f"sqlite:///{tmp_path / 'old.db'}"
    command.upgrade(alembic_config(url), revision)
    engine = create_engine(url)
    try:
        with engine.begin() as connection:
            connection.execute(text(platform))
            for row in rows:
                connection.execute(text(attempt), row)
        upgrade(url)
        with engine.connect() as connection:
            return connection.execute(text(read)).all()
    finally:
        engine.dispose()


def test_migration_numbers_existing_attempts_per_user_and_link(tmp_path):
    rows = [{"user": user, "link": link, "sha": str(sha)}
            for sha, (user, link) in enumerate((("u1", "r1"), ("u2", "r1"), ("u1", "r1"), ("u1", "r2")))]  # fmt: skip
    numbers = migrated(
        tmp_path, "0002",
        "INSERT INTO platforms VALUES (1, 'i', 'c', '[]', 'a', 't', 'j', '', '2026-01-01')",
        "INSERT INTO attempts (platform_id, context_id, resource_link_id, user_id, filename, notebook, sha256, "
        "status, created_at, user_name, late_penalty) VALUES (1, 'c', :link, :user, 'n', x'00', :sha, 'graded', "
        "'2026-01-01', '', 0)",
        rows, "SELECT user_id, resource_link_id, number FROM attempts ORDER BY id",
    )  # fmt: skip
    assert numbers == [("u1", "r1", 1), ("u2", "r1", 1), ("u1", "r1", 2), ("u1", "r2", 1)]


def test_migration_reads_again_the_answers_a_blank_digest_may_stand_for(tmp_path):
    """Until 0016 an answer whose marker was deleted stored a blank answer's digest: such attempts read their
    notebook again (a missing answer then gets its own digest, so a blank answer's grade is not carried over)."""
    from autograder.written import EMPTY_DIGEST

    stored = {"blank": {"q": EMPTY_DIGEST}, "answered": {"q": "ab" * 32}, "none": None}
    rows = dict(migrated(
        tmp_path, "0015_late_day_forgiveness",
        "INSERT INTO platforms (id, issuer, client_id, deployment_ids, auth_login_url, auth_token_url, key_set_url, "
        "name, created_at, service_origins) VALUES (1, 'i', 'c', '[]', 'a', 't', 'j', '', '2026-01-01', '[]')",
        "INSERT INTO attempts (platform_id, context_id, resource_link_id, user_id, number, filename, notebook, "
        "sha256, status, created_at, user_name, late_penalty, written, assignment_version_id) VALUES (1, 'c', 'r', "
        ":user, 1, 'n', x'00', :user, 'graded', '2026-01-01', '', 0, :written, 1)",
        [{"user": user, "written": None if w is None else json.dumps(w)} for user, w in stored.items()],
        "SELECT user_id, written FROM attempts",
    ))  # fmt: skip
    assert rows["blank"] in (None, "null") and rows["none"] in (None, "null")
    assert json.loads(rows["answered"]) == {"q": "ab" * 32}


def test_origins_are_normalised_and_only_http_urls_have_one():
    from lti_service.lti.outbound import OutboundError, fetch, origin

    assert origin("HTTPS://LMS.Example:443/a?b") == "https://lms.example"
    assert origin("http://127.0.0.2:5001/x") == "http://127.0.0.2:5001"
    assert origin("http://[::1]:80/") == "http://[::1]"
    for url in ("file:///etc/passwd", "gopher://x", "https://", "https://h:99999/", None, 7):
        assert origin(url) is None
    with pytest.raises(OutboundError, match="not one of the platform's registered origins"):
        fetch("get", "file:///etc/passwd", origins={"https://lms.example"}, timeout=1)


def test_hosted_canvas_is_added_with_todays_endpoints(tmp_path, monkeypatch, capsys):
    from lti_service.cli import main
    from lti_service.platforms import list_platforms

    monkeypatch.setenv("DATA_DIR", str(tmp_path))
    monkeypatch.setattr("lti_service.cli.configure_logging", lambda: None)  # leave pytest's logging alone
    added = main(["platform", "add", "--canvas", "production", "--client-id", "10000000000042", "--deployment-id", "7"])
    assert added == 0
    assert "platform update 1 --service-origin https://<your canvas>" in capsys.readouterr().out
    (canvas,) = list_platforms(Services.from_config(Config(data_dir=tmp_path)).db)
    assert (canvas.issuer, canvas.auth_login_url, canvas.auth_token_url, canvas.key_set_url) == (
        "https://canvas.instructure.com",
        "https://sso.canvaslms.com/api/lti/authorize_redirect",
        "https://sso.canvaslms.com/login/oauth2/token",
        "https://sso.canvaslms.com/api/lti/security/jwks",
    )
    assert main(["platform", "update", "1", "--service-origin", "https://school.instructure.com"]) == 0
    frame_ancestors = Services.from_config(Config(data_dir=tmp_path)).platforms.frame_origins()
    assert "https://school.instructure.com" in frame_ancestors  # Canvas frames the tool from the school's domain
    with pytest.raises(SystemExit):  # without --canvas the four values are needed
        main(["platform", "add", "--client-id", "c", "--deployment-id", "1"])
    assert "needs --issuer, --auth-url, --token-url, --jwks-url" in capsys.readouterr().err


def test_the_migration_to_many_assignments_pins_earlier_links_to_decode_version_1(tmp_path, built_assignment):
    """A database made before assignments were data: every link it knows (from attempts, settings or launches)
    is pinned to Decode's version 1, the build's zip, and every attempt is graded against it."""
    from alembic import command
    from sqlalchemy import create_engine, text

    from lti_service.db import AssignmentLink, AssignmentVersion, Database
    from lti_service.migrate import alembic_config, upgrade

    url = f"sqlite:///{tmp_path / 'before.db'}"
    command.upgrade(alembic_config(url), "0004_lms")
    rows = [
        "INSERT INTO platforms VALUES (1, 'https://lms.example', 'c', '[]', 'a', 't', 'j', '', '2026-01-01', '[]')",
        "INSERT INTO attempts (id, platform_id, context_id, resource_link_id, user_id, filename, notebook, sha256, "
        "status, created_at, user_name, late_penalty, number) VALUES (1, 1, 'c1', 'submitted', 'u', 'n.ipynb', '{}', "
        "'x', 'graded', '2026-01-01', '', 0, 1)",
        "INSERT INTO link_settings VALUES (1, 1, 'c1', 'configured', 'best', NULL, 'accept', 0, 0)",
        "INSERT INTO launches VALUES ('l1', 1, 'd', 'LtiResourceLinkRequest', 'c2', 'opened', 'u', '', '[]', '{}', "
        "'2026-01-01', '2026-01-01')",
        "INSERT INTO launches VALUES ('l2', 1, 'd', 'LtiDeepLinkingRequest', 'c2', '', 'u', '', '[]', '{}', "
        "'2026-01-01', '2026-01-01')",
    ]
    with create_engine(url).begin() as connection:
        for row in rows:
            connection.execute(text(row))
    upgrade(url)
    with Database(url).session() as session:
        (decode,) = session.scalars(select(AssignmentVersion))
        pins = {(p.context_id, p.resource_link_id): p.version_id for p in session.scalars(select(AssignmentLink))}
        attempt = session.get(Attempt, 1)
        zip_sha256 = decode.zip_sha256
    assert (decode.number, decode.title, decode.points) == (1, "Decode: one token at a time", 16.0)
    assert zip_sha256 == hashlib.sha256(built_assignment["zip"].read_bytes()).hexdigest()
    assert pins == {("c1", "submitted"): decode.id, ("c1", "configured"): decode.id, ("c2", "opened"): decode.id}
    assert attempt.assignment_version_id == decode.id
