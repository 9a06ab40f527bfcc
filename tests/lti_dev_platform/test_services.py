"""Token endpoint, AGS and NRPS with bearer tokens, over HTTP."""

from __future__ import annotations

import time

import requests

from lti_dev_platform import client
from tests.lti_dev_platform.conftest import Running
from tests.lti_dev_platform.fake_tool import ToolKey

AGS = "https://purl.imsglobal.org/spec/lti-ags/scope"
SCORE = f"{AGS}/score"
NRPS = "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly"
SCORE_TYPE = "application/vnd.ims.lis.v1.score+json"


def test_token_accepts_a_good_assertion(running: Running) -> None:
    resp = running.tool.token_request(f"{SCORE} https://example.com/unknown-scope")

    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["token_type"] == "Bearer"
    assert body["expires_in"] == 3600
    assert body["scope"] == SCORE
    assert body["access_token"].count(".") == 2
    assert running.state()["token_requests"] == 1


def test_token_rejects_bad_assertions(running: Running) -> None:
    tool = running.tool
    reused = tool.assertion()
    assert tool.token_request(SCORE, reused).status_code == 200
    now = int(time.time())
    bad = {
        "reused jti": reused,
        "bad iss": tool.assertion(iss="someone-else"),
        "bad sub": tool.assertion(sub="someone-else"),
        "bad aud": tool.assertion(aud=f"{running.url}/not-token"),
        "expired": tool.assertion(iat=now - 600, exp=now - 300),
        "no jti": tool.assertion(jti=None),
        "unknown key": ToolKey("tool-key-1").sign({"iss": tool.client_id, "sub": tool.client_id, "exp": now + 60}),
    }
    for name, assertion in bad.items():
        resp = tool.token_request(SCORE, assertion)
        assert resp.status_code == 401, name
        assert resp.json()["error"] == "invalid_client", name
    state = running.state()
    assert state["token_requests"] == 1 + len(bad)
    assert state["tool"]["jwks_fetches"] == 1  # cached; same kid, so no refetch


def _score(user: str, given: float, timestamp: str, grading: str = "FullyGraded") -> dict[str, object]:
    return {
        "userId": user,
        "scoreGiven": given,
        "scoreMaximum": 100,
        "comment": "well done",
        "activityProgress": "Completed",
        "gradingProgress": grading,
        "timestamp": timestamp,
    }


def _scores_url(lineitem_url: str) -> str:
    path, query = lineitem_url.split("?")
    return f"{path}/scores?{query}"


def test_scores_follow_moodle_rules(running: Running) -> None:
    """Moodle's: a later timestamp only, and a score that is not FullyGraded empties the grade."""
    assert running.hook("config", {"product_family_code": "moodle"}).status_code == 200
    try:
        _post_moodle_scores(running)
    finally:
        running.hook("config", {"product_family_code": "lti-dev-platform"})
    stored = {(s["user_id"], s["score_given"]) for s in running.state()["scores"]}
    assert stored == {("student-ada", None), ("student-grace", 70)}


def test_scores_follow_canvas_rules_by_default(running: Running) -> None:
    """Canvas keeps a PendingManual score (it shows "needs grading"); other progress values empty the grade."""
    lineitem = f"{running.url}/ags/decode-101/lineitems/1/lineitem?type_id=1"
    headers = {"Authorization": f"Bearer {running.tool.access_token(SCORE)}", "Content-Type": SCORE_TYPE}
    for user, given, grading in (("student-ada", 12, "PendingManual"), ("student-grace", 30, "Pending")):
        body = _score(user, given, "2031-01-01T10:00:00Z", grading=grading)
        assert requests.post(_scores_url(lineitem), json=body, headers=headers, timeout=10).status_code == 200
    stored = {s["user_id"]: (s["score_given"], s["grading_progress"]) for s in running.state()["scores"]}
    assert stored["student-ada"] == (12, "PendingManual")
    assert stored["student-grace"] == (None, "Pending")


def _post_moodle_scores(running: Running) -> None:
    lineitem = f"{running.url}/ags/decode-101/lineitems/1/lineitem?type_id=1"
    headers = {"Authorization": f"Bearer {running.tool.access_token(SCORE)}", "Content-Type": SCORE_TYPE}

    def post(body: dict[str, object], url: str = _scores_url(lineitem)) -> requests.Response:
        return requests.post(url, json=body, headers=headers, timeout=10)

    assert post(_score("student-ada", 80, "2030-01-01T10:00:00Z")).status_code == 200
    assert post(_score("student-ada", 90, "2030-01-01T10:00:00Z")).status_code == 409
    assert post(_score("student-ada", 90, "2030-01-01T09:00:00+00:00")).status_code == 409
    assert post(_score("student-ada", 50, "2030-01-01T11:00:00Z", grading="Pending")).status_code == 200
    after_query = post(_score("student-ada", 90, "2030-01-02T10:00:00Z"), url=lineitem + "/scores")
    assert after_query.status_code == 400
    assert "type_id" in after_query.json()["error_description"]
    assert post(_score("instructor-turing", 90, "2030-01-02T10:00:00Z")).status_code == 422
    assert post(_score("student-ada", 90, "yesterday")).status_code == 400
    wrong_type = requests.post(
        _scores_url(lineitem),
        json=_score("student-ada", 90, "2030-01-02T10:00:00Z"),
        headers={"Authorization": headers["Authorization"]},
        timeout=10,
    )
    assert wrong_type.status_code == 415

    assert running.hook("fail-scores", {"count": 1, "status": 500}).status_code == 200
    assert post(_score("student-grace", 70, "2030-01-01T10:00:00Z")).status_code == 500
    assert post(_score("student-grace", 70, "2030-01-01T10:00:00Z")).status_code == 200
    gradebook = requests.get(f"{running.url}/gradebook", timeout=10).text
    assert "Grace Hopper" in gradebook and "70/100" in gradebook and "80/100" not in gradebook  # Ada's emptied


def test_score_needs_the_score_scope(running: Running) -> None:
    url = f"{running.url}/ags/decode-101/lineitems/1/lineitem/scores?type_id=1"
    body = _score("student-ada", 1, "2030-01-01T10:00:00Z")
    no_token = requests.post(url, json=body, headers={"Content-Type": SCORE_TYPE}, timeout=10)
    assert no_token.status_code == 401
    nrps_token = running.tool.access_token(NRPS)
    wrong_scope = requests.post(
        url, json=body, headers={"Content-Type": SCORE_TYPE, "Authorization": f"Bearer {nrps_token}"}, timeout=10
    )
    assert wrong_scope.status_code == 403
    assert running.state()["scores"] == []


def test_line_items_and_results(running: Running) -> None:
    full = {"Authorization": f"Bearer {running.tool.access_token(f'{AGS}/lineitem {AGS}/result.readonly {SCORE}')}"}
    readonly = {"Authorization": f"Bearer {running.tool.access_token(f'{AGS}/lineitem.readonly')}"}
    container = f"{running.url}/ags/decode-101/lineitems?type_id=1"
    item = {"label": "Quiz", "scoreMaximum": 5, "resourceId": "quiz", "tag": "grade"}

    assert requests.post(container, json=item, headers=readonly, timeout=10).status_code == 403
    created = requests.post(container, json=item, headers=full, timeout=10)
    assert created.status_code == 201
    item_url = created.json()["id"]
    assert item_url.endswith("/lineitem?type_id=1")
    listed = requests.get(container, params={"resource_id": "quiz"}, headers=readonly, timeout=10).json()
    assert [i["label"] for i in listed] == ["Quiz"]
    updated = requests.put(item_url, json={"label": "Quiz 1"}, headers=full, timeout=10)
    assert updated.json()["label"] == "Quiz 1"

    score = _score("student-grace", 4, "2030-01-01T10:00:00Z")
    scored = requests.post(_scores_url(item_url), json=score, headers={**full, "Content-Type": SCORE_TYPE}, timeout=10)
    assert scored.status_code == 200
    path, query = item_url.split("?")
    results = requests.get(f"{path}/results?{query}", headers=full, timeout=10).json()
    assert [(r["userId"], r["resultScore"]) for r in results] == [("student-grace", 4)]


def test_nrps_lists_the_course_members(running: Running) -> None:
    url = f"{running.url}/nrps/decode-101/memberships"
    assert requests.get(url, timeout=10).status_code == 401

    resp = requests.get(url, headers={"Authorization": f"Bearer {running.tool.access_token(NRPS)}"}, timeout=10)

    assert resp.status_code == 200
    assert resp.headers["Content-Type"].startswith("application/vnd.ims.lti-nrps.v2.membershipcontainer+json")
    members = {m["user_id"]: m for m in resp.json()["members"]}
    assert set(members) == {"student-ada", "student-grace", "instructor-turing"}
    assert members["student-ada"]["name"] == "Ada Lovelace"
    assert all(m["status"] == "Active" for m in members.values())
    assert members["instructor-turing"]["roles"] == ["http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"]


def test_nrps_sends_short_role_names_like_moodle(running: Running) -> None:
    assert running.hook("config", {"short_nrps_roles": True}).json()["short_nrps_roles"] is True
    url = f"{running.url}/nrps/decode-101/memberships"
    resp = requests.get(url, headers={"Authorization": f"Bearer {running.tool.access_token(NRPS)}"}, timeout=10)
    roles = {m["user_id"]: m["roles"] for m in resp.json()["members"]}
    assert roles == {"student-ada": ["Learner"], "student-grace": ["Learner"], "instructor-turing": ["Instructor"]}


def test_links_offer_full_sync_only_or_no_assignment_and_grade_services(running: Running) -> None:
    endpoint = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
    claims = {}
    for ags in ("full", "sync", "none"):
        assert running.hook("resource-link", {"resource_link_id": f"plain-{ags}", "line_item": False, "ags": ags})
        client.launch(running.url, requests.Session(), resource_link=f"plain-{ags}")
        claims[ags] = running.tool.launches[-1]["claims"].get(endpoint)
    assert "lineitem" not in claims["full"] and claims["full"]["lineitems"].endswith("/lineitems?type_id=1")
    assert f"{AGS}/lineitem" in claims["full"]["scope"] and SCORE in claims["full"]["scope"]
    assert f"{AGS}/lineitem" not in claims["sync"]["scope"] and SCORE in claims["sync"]["scope"]
    assert claims["none"] is None
