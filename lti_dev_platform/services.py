"""LTI Advantage services: the OAuth2 token endpoint, Assignment and Grade Services, and NRPS.

URL scheme (Moodle-like; every AGS URL carries ``?type_id=<tool type>``, which must be kept):
  line items   GET/POST        /ags/<context_id>/lineitems?type_id=T
  a line item  GET/PUT/DELETE  /ags/<context_id>/lineitems/<id>/lineitem?type_id=T
  scores       POST            /ags/<context_id>/lineitems/<id>/lineitem/scores?type_id=T
  results      GET             /ags/<context_id>/lineitems/<id>/lineitem/results?type_id=T
  memberships  GET             /nrps/<context_id>/memberships
A tool that appends ``/scores`` after the query string sends ``type_id=T/scores`` and gets a 400 saying so.
"""

from __future__ import annotations

import time
import typing as t
import uuid
from dataclasses import asdict
from datetime import UTC, datetime, timedelta

import jwt
from flask import Blueprint, Response, jsonify, request

from lti_dev_platform.keys import ToolKeyError
from lti_dev_platform.platform import Platform, platform
from lti_dev_platform.store import LIS, LineItem, Score, Tool, User

bp = Blueprint("services", __name__)

AGS = "https://purl.imsglobal.org/spec/lti-ags/scope"
SCOPE_LINEITEM = f"{AGS}/lineitem"
SCOPE_LINEITEM_READONLY = f"{AGS}/lineitem.readonly"
SCOPE_RESULT = f"{AGS}/result.readonly"
SCOPE_SCORE = f"{AGS}/score"
SCOPE_NRPS = "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly"
SUPPORTED_SCOPES = [SCOPE_LINEITEM, SCOPE_LINEITEM_READONLY, SCOPE_RESULT, SCOPE_SCORE, SCOPE_NRPS]
JWT_BEARER = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
SCORE_TYPE = "application/vnd.ims.lis.v1.score+json"
ACTIVITY = {"Initialized", "Started", "InProgress", "Submitted", "Completed"}
GRADING = {"FullyGraded", "Pending", "PendingManual", "Failed", "NotReady"}
TOKEN_LIFETIME = 3600
SUBMISSION = "https://canvas.instructure.com/lti/submission"  # Canvas's extension of a score
_KEPT = {False: {"FullyGraded", "PendingManual"}, True: {"FullyGraded"}}
"""gradingProgress values whose scoreGiven is kept: Canvas's (and the default), and Moodle's (True)"""


def json_error(status: int, message: str, **extra: t.Any) -> Response:
    resp = jsonify({"error": extra.pop("error", "invalid_request"), "error_description": message, **extra})
    resp.status_code = status
    return resp


def _canvas_unprocessable(message: str) -> Response:
    """A 422 as Canvas's AGS controllers render one."""
    resp = jsonify({"errors": {"type": "unprocessable_entity", "message": message}})
    resp.status_code = 422
    return resp


def _oauth_error(status: int, error: str, message: str) -> Response:
    resp = json_error(status, message, error=error)
    resp.headers["Cache-Control"] = "no-store"
    return resp


@bp.post("/token")
def token() -> Response:
    """client_credentials with a JWT client assertion (IMS Security Framework), with the checks the library skips."""
    p = platform()
    with p.state.lock:
        p.state.token_requests += 1
        tool = p.state.tool
    form = request.form
    missing = [k for k in ("grant_type", "client_assertion_type", "client_assertion", "scope") if not form.get(k)]
    if missing:
        return _oauth_error(400, "invalid_request", f"missing {', '.join(missing)}")
    if form["grant_type"] != "client_credentials":
        return _oauth_error(400, "unsupported_grant_type", "grant_type must be client_credentials")
    if form["client_assertion_type"] != JWT_BEARER:
        return _oauth_error(400, "invalid_request", f"client_assertion_type must be {JWT_BEARER}")
    if tool is None:
        return _oauth_error(401, "invalid_client", "no tool is registered")
    try:
        claims = tool.keys.verify(form["client_assertion"])
    except ToolKeyError as exc:
        return _oauth_error(401, "invalid_client", f"client assertion: {exc}")
    problem = _assertion_problem(claims, tool, p.token_url)
    if problem is None and not p.state.take_jti(str(claims["jti"]), float(claims["exp"])):
        problem = "jti was already used"
    if problem:
        return _oauth_error(401, "invalid_client", f"client assertion: {problem}")
    granted = [s for s in form["scope"].split() if s in SUPPORTED_SCOPES]
    if not granted:
        return _oauth_error(400, "invalid_scope", f"none of the requested scopes is supported: {SUPPORTED_SCOPES}")
    scope = " ".join(granted)
    access_token = p.key.sign(
        {"iss": p.issuer, "sub": tool.client_id, "aud": p.token_url, "scopes": scope, "jti": uuid.uuid4().hex},
        TOKEN_LIFETIME,
    )
    resp = jsonify({"access_token": access_token, "token_type": "Bearer", "expires_in": TOKEN_LIFETIME, "scope": scope})
    resp.headers["Cache-Control"] = "no-store"
    return resp


def _assertion_problem(claims: dict[str, t.Any], tool: Tool, token_url: str) -> str | None:
    if claims.get("iss") != tool.client_id:
        return f"iss must be the client_id {tool.client_id!r}"
    if claims.get("sub") != tool.client_id:
        return f"sub must be the client_id {tool.client_id!r}"
    aud = claims.get("aud")
    if token_url not in (aud if isinstance(aud, list) else [aud]):
        return f"aud must be the token URL {token_url!r}"
    if not isinstance(claims.get("exp"), int | float) or claims["exp"] < time.time():
        return "exp is missing or in the past"
    if not claims.get("jti"):
        return "jti is required"
    return None


def require_scope(p: Platform, *scopes: str) -> Response | None:
    """None when the bearer token is ours, for the registered tool, and grants one of ``scopes``."""
    header = request.headers.get("Authorization", "")
    if not header.lower().startswith("bearer "):
        resp = json_error(401, "a Bearer access token is required", error="invalid_token")
        resp.headers["WWW-Authenticate"] = "Bearer"
        return resp
    try:
        claims = p.key.decode(header[7:].strip(), audience=p.token_url, issuer=p.issuer)
    except jwt.PyJWTError as exc:
        resp = json_error(401, f"access token: {exc}", error="invalid_token")
        resp.headers["WWW-Authenticate"] = 'Bearer error="invalid_token"'
        return resp
    tool = p.state.tool
    if tool is None or claims.get("sub") != tool.client_id:
        return json_error(401, "access token was issued to another client", error="invalid_token")
    if not set(scopes) & set(str(claims.get("scopes", "")).split()):
        return json_error(403, f"access token lacks scope {' or '.join(scopes)}", error="insufficient_scope")
    return None


def check_type_id(p: Platform) -> Response | None:
    tool = p.state.tool
    got = request.args.get("type_id")
    if tool is None or got != str(tool.type_id):
        return json_error(
            400,
            f"type_id must be {tool.type_id if tool else '?'} (got {got!r}); keep the line item URL's query string "
            "and add /scores or /results to its path, not after the query",
        )
    return None


def lineitem_json(p: Platform, item: LineItem) -> dict[str, t.Any]:
    data = {
        "id": p.lineitem_url(item.context_id, item.id, p.state.tool),
        "label": item.label,
        "scoreMaximum": item.score_maximum,
        "resourceId": item.resource_id,
        "tag": item.tag,
        "resourceLinkId": item.resource_link_id,
        "startDateTime": item.start_date_time,
        "endDateTime": item.end_date_time,
    }
    return {k: v for k, v in data.items() if v is not None}


def _typed(data: t.Any, content_type: str, status: int = 200) -> Response:
    resp = jsonify(data)
    resp.status_code = status
    resp.content_type = content_type
    return resp


def _line_item_fields(body: t.Any, partial: bool) -> dict[str, t.Any] | str:
    """Line item JSON to dataclass fields, or an error message."""
    if not isinstance(body, dict):
        return "body must be a JSON object"
    fields: dict[str, t.Any] = {}
    if "label" in body or not partial:
        if not isinstance(body.get("label"), str) or not body["label"].strip():
            return "label must be a non-empty string"
        fields["label"] = body["label"]
    if "scoreMaximum" in body or not partial:
        value = body.get("scoreMaximum")
        if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
            return "scoreMaximum must be a number > 0"
        fields["score_maximum"] = float(value)
    for key, attr in (
        ("resourceId", "resource_id"),
        ("tag", "tag"),
        ("resourceLinkId", "resource_link_id"),
        ("startDateTime", "start_date_time"),
        ("endDateTime", "end_date_time"),
    ):
        if key in body:
            fields[attr] = body[key]
    return fields


def _find_item(p: Platform, context_id: str, item_id: str) -> LineItem | Response:
    item = p.state.line_items.get(item_id)
    if item is None or item.context_id != context_id:
        return json_error(404, f"no line item {item_id} in context {context_id}")
    return item


@bp.route("/ags/<context_id>/lineitems", methods=["GET", "POST"])
def lineitems(context_id: str) -> Response:
    p = platform()
    if request.method == "POST" and p.settings.lineitems_delay:
        time.sleep(p.settings.lineitems_delay)  # a slow platform, so that concurrent creations overlap (tests)
    with p.state.lock:
        if request.method == "GET":
            denied = require_scope(p, SCOPE_LINEITEM, SCOPE_LINEITEM_READONLY) or check_type_id(p)
            if denied:
                return denied
            items = [i for i in p.state.line_items.values() if i.context_id == context_id]
            for arg, attr in (("resource_link_id", "resource_link_id"), ("resource_id", "resource_id"), ("tag", "tag")):
                if arg in request.args:
                    items = [i for i in items if getattr(i, attr) == request.args[arg]]
            return _typed([lineitem_json(p, i) for i in items], "application/vnd.ims.lis.v2.lineitemcontainer+json")
        denied = require_scope(p, SCOPE_LINEITEM) or check_type_id(p)
        if denied:
            return denied
        fields = _line_item_fields(request.get_json(force=True, silent=True), partial=False)
        if isinstance(fields, str):
            return json_error(400, fields)
        p.state.course(context_id)
        item = p.state.add_line_item(context_id, **fields)
        return _typed(lineitem_json(p, item), "application/vnd.ims.lis.v2.lineitem+json", 201)


@bp.route("/ags/<context_id>/lineitems/<item_id>/lineitem", methods=["GET", "PUT", "DELETE", "POST"])
def lineitem(context_id: str, item_id: str) -> Response:
    p = platform()
    if request.method == "POST":  # the classic mistake: `/scores` appended after the query string
        return check_type_id(p) or json_error(405, "POST scores to the line item path + /scores")
    with p.state.lock:
        scopes = (SCOPE_LINEITEM, SCOPE_LINEITEM_READONLY) if request.method == "GET" else (SCOPE_LINEITEM,)
        denied = require_scope(p, *scopes) or check_type_id(p)
        if denied:
            return denied
        item = _find_item(p, context_id, item_id)
        if isinstance(item, Response):
            return item
        if request.method == "GET":
            p.state.lineitem_reads += 1
        if request.method == "DELETE":
            del p.state.line_items[item_id]
            return Response(status=204)
        if request.method == "PUT":
            fields = _line_item_fields(request.get_json(force=True, silent=True), partial=True)
            if isinstance(fields, str):
                return json_error(400, fields)
            for attr, value in fields.items():
                setattr(item, attr, value)
        return _typed(lineitem_json(p, item), "application/vnd.ims.lis.v2.lineitem+json")


def _parse_timestamp(value: t.Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else None


def _score_problem(body: t.Any, context_id: str, users: dict[str, User]) -> str | tuple[int, str] | None:
    if not isinstance(body, dict):
        return "body must be a JSON object"
    user = users.get(body.get("userId")) if isinstance(body.get("userId"), str) else None
    if not isinstance(body.get("userId"), str) or not body["userId"]:
        return "userId is required (the launch's sub)"
    if user is None:
        return 422, f"user {body['userId']!r} is not enrolled in {context_id}"
    if user.role != "Learner":
        return 422, f"user {body['userId']!r} is not a student in {context_id} (only students get grades)"
    if body.get("activityProgress") not in ACTIVITY:
        return f"activityProgress must be one of {sorted(ACTIVITY)}"
    if body.get("gradingProgress") not in GRADING:
        return f"gradingProgress must be one of {sorted(GRADING)}"
    if _parse_timestamp(body.get("timestamp")) is None:
        return "timestamp must be an ISO 8601 date-time with a time zone"
    given = body.get("scoreGiven")
    if given is not None:
        maximum = body.get("scoreMaximum")
        if isinstance(given, bool) or not isinstance(given, int | float) or given < 0:
            return "scoreGiven must be a number >= 0"
        if isinstance(maximum, bool) or not isinstance(maximum, int | float) or maximum <= 0:
            return "scoreMaximum must be a number > 0 when scoreGiven is sent"
    if "comment" in body and body["comment"] is not None and not isinstance(body["comment"], str):
        return "comment must be a string"
    return _submission_problem(body.get(SUBMISSION))


def _submission_problem(extension: t.Any) -> str | None:
    """Canvas's checks of its submission extension: submitted_at, when sent, is a time not in the future."""
    if extension is None or (isinstance(extension, dict) and "submitted_at" not in extension):
        return None
    submitted_at = _parse_timestamp(extension.get("submitted_at")) if isinstance(extension, dict) else None
    if submitted_at is None:
        return f"{SUBMISSION} submitted_at must be an ISO 8601 date-time with a time zone"
    if submitted_at > datetime.now(UTC) + timedelta(minutes=1):
        return f"{SUBMISSION} submitted_at is in the future"
    return None


def _canvas_refusal(p: Platform, item: LineItem, user_id: str) -> Response | None:
    """Canvas's refusals of a well-formed score (test hooks set them up: conclude, publish)."""
    if user_id in p.state.concluded:
        return _canvas_unprocessable("User not found in course or is not a student")
    if not item.published:
        return _canvas_unprocessable("This assignment is still unpublished")
    return None


@bp.post("/ags/<context_id>/lineitems/<item_id>/lineitem/scores")
def scores(context_id: str, item_id: str) -> Response:
    """409 unless the timestamp is later than the stored one (Moodle's rule); the score is kept only for the
    progress values the platform's product keeps (_KEPT), otherwise the grade is emptied."""
    p = platform()
    with p.state.lock:
        body = request.get_json(force=True, silent=True)
        entry: dict[str, t.Any] = {
            "context_id": context_id,
            "line_item_id": item_id,
            "body": body,
            "received_at": time.time(),
        }
        p.state.score_log.append(entry)
        if p.state.fail_scores["count"] > 0:
            p.state.fail_scores["count"] -= 1
            entry["status"] = p.state.fail_scores["status"]
            return json_error(entry["status"], p.state.fail_scores["message"], error="server_error")
        resp = _store_score(p, context_id, item_id, body)
        entry["status"] = resp.status_code
        return resp


def _store_score(p: Platform, context_id: str, item_id: str, body: t.Any) -> Response:
    denied = require_scope(p, SCOPE_SCORE) or check_type_id(p)
    if denied:
        return denied
    item = _find_item(p, context_id, item_id)
    if isinstance(item, Response):
        return item
    if request.mimetype != SCORE_TYPE:
        return json_error(415, f"Content-Type must be {SCORE_TYPE}")
    problem = _score_problem(body, context_id, p.state.users)
    if problem:
        status, message = problem if isinstance(problem, tuple) else (400, problem)
        return json_error(status, message)
    refused = _canvas_refusal(p, item, body["userId"])
    if refused:
        return refused
    key = (item_id, body["userId"])
    stored = p.state.scores.get(key)
    new_time = _parse_timestamp(body["timestamp"])
    assert new_time is not None
    if stored is not None and new_time <= _parse_timestamp(stored.timestamp):  # type: ignore[operator]
        return json_error(409, f"timestamp must be later than the stored {stored.timestamp}", error="conflict")
    kept = body["gradingProgress"] in _KEPT[p.settings.product_family_code == "moodle"]
    p.state.scores[key] = Score(
        user_id=body["userId"],
        line_item_id=item_id,
        score_given=body.get("scoreGiven") if kept else None,  # not kept: the grade is emptied
        score_maximum=body.get("scoreMaximum"),
        comment=body.get("comment"),
        timestamp=body["timestamp"],
        activity_progress=body["activityProgress"],
        grading_progress=body["gradingProgress"],
        submitted_at=(body.get(SUBMISSION) or {}).get("submitted_at"),
    )
    return jsonify({"resultUrl": p.lineitem_url(context_id, item_id, p.state.tool).replace("?", "/results?", 1)})


@bp.get("/ags/<context_id>/lineitems/<item_id>/lineitem/results")
def results(context_id: str, item_id: str) -> Response:
    p = platform()
    with p.state.lock:
        denied = require_scope(p, SCOPE_RESULT) or check_type_id(p)
        if denied:
            return denied
        item = _find_item(p, context_id, item_id)
        if isinstance(item, Response):
            return item
        url = p.lineitem_url(context_id, item_id, p.state.tool)
        out = []
        for score in p.state.scores.values():
            if score.line_item_id != item_id or request.args.get("user_id", score.user_id) != score.user_id:
                continue
            result = {
                "id": f"{url}&user_id={score.user_id}",
                "scoreOf": url,
                "userId": score.user_id,
                "resultScore": score.score_given,
                "resultMaximum": score.score_maximum,
                "comment": score.comment,
                "timestamp": score.timestamp,
            }
            out.append({k: v for k, v in result.items() if v is not None})
        return _typed(out, "application/vnd.ims.lis.v2.resultcontainer+json")


@bp.get("/nrps/<context_id>/memberships")
def memberships(context_id: str) -> Response:
    p = platform()
    if p.settings.nrps_delay:
        time.sleep(p.settings.nrps_delay)  # a slow platform, so that concurrent reads overlap (tests)
    with p.state.lock:
        p.state.nrps_requests[context_id] = p.state.nrps_requests.get(context_id, 0) + 1
        denied = require_scope(p, SCOPE_NRPS)
        if denied:
            return denied
        course = p.state.course(context_id)
        members = [
            {
                "user_id": u.sub,
                "name": u.name,
                "given_name": u.given_name,
                "family_name": u.family_name,
                "email": u.email,
                "roles": [u.role] if p.settings.short_nrps_roles else [f"{LIS}/membership#{u.role}"],
                "status": "Active",
            }
            for u in p.state.users.values()
            if u.sub not in p.state.concluded  # Canvas lists active enrolments only
        ]
        if "role" in request.args:
            role = request.args["role"]
            members = [m for m in members if role in m["roles"] or role in m["roles"][0]]
        return _typed(
            {"id": request.url, "context": asdict(course), "members": members},
            "application/vnd.ims.lti-nrps.v2.membershipcontainer+json",
        )
