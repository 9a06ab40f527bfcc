"""Deep-linking return: verify the tool's LtiDeepLinkingResponse and add its resource links to the course."""

from __future__ import annotations

import typing as t

from flask import Blueprint, render_template, request

from lti_dev_platform.keys import ToolKeyError
from lti_dev_platform.launch import LTI, error_page
from lti_dev_platform.platform import Platform, platform
from lti_dev_platform.store import ResourceLink, Tool

bp = Blueprint("deep_linking", __name__)

DL = "https://purl.imsglobal.org/spec/lti-dl/claim"


def _response_problem(claims: dict[str, t.Any], tool: Tool, p: Platform) -> str | None:
    aud = claims.get("aud")
    if claims.get("iss") != tool.client_id:
        return f"iss must be the client_id {tool.client_id!r}"
    if p.issuer not in (aud if isinstance(aud, list) else [aud]):
        return f"aud must be the platform issuer {p.issuer!r}"
    if not claims.get("nonce"):
        return "nonce is required"
    if claims.get(f"{LTI}/message_type") != "LtiDeepLinkingResponse":
        return "message_type must be LtiDeepLinkingResponse"
    if claims.get(f"{LTI}/version") != "1.3.0":
        return "version must be 1.3.0"
    if claims.get(f"{LTI}/deployment_id") != tool.deployment_id:
        return f"deployment_id must be {tool.deployment_id!r}"
    return None


def _item_problem(item: t.Any) -> str | None:
    if not isinstance(item, dict) or item.get("type") != "ltiResourceLink":
        return "only ltiResourceLink content items are accepted"
    if "custom" in item and not isinstance(item["custom"], dict):
        return "custom must be an object"
    line_item = item.get("lineItem")
    if line_item is not None:
        maximum = line_item.get("scoreMaximum") if isinstance(line_item, dict) else None
        if isinstance(maximum, bool) or not isinstance(maximum, int | float) or maximum <= 0:
            return "lineItem.scoreMaximum must be a number > 0"
    return None


@bp.post("/deep-link-return")
def deep_link_return() -> t.Any:
    p = platform()
    token = request.form.get("JWT")
    if not token:
        return error_page("The deep-linking response needs a JWT form field.", 400)
    tool = p.state.tool
    if tool is None:
        return error_page("No tool is registered.", 400)
    try:
        claims = tool.keys.verify(token)
    except ToolKeyError as exc:
        return error_page(f"Deep-linking response rejected: {exc}.", 400)
    problem = _response_problem(claims, tool, p)
    items = claims.get(f"{DL}/content_items", [])
    if problem is None and not isinstance(items, list):
        problem = "content_items must be a list"
    if problem is None and len(items) > 1:
        problem = "accept_multiple is false: send at most one content item"
    if problem is None:
        problem = next((m for m in map(_item_problem, items) if m), None)
    with p.state.lock:
        request_data = p.state.deep_link_data.get(str(claims.get(f"{DL}/data")))
        if problem is None and request_data is None:
            problem = "data must echo the deep-linking request's data (each request can be answered once)"
        if problem:
            return error_page(f"Deep-linking response rejected: {problem}.", 400)
        assert request_data is not None
        del p.state.deep_link_data[str(claims[f"{DL}/data"])]
        context_id = request_data["context_id"]
        added = [_add_item(p, context_id, item) for item in items]
    return render_template(
        "deep_link_done.html",
        heading="Activities added" if added else "No activity added",
        added=added,
        context_id=context_id,
        msg=claims.get(f"{DL}/msg"),
        errormsg=claims.get(f"{DL}/errormsg"),
    )


def _add_item(p: Platform, context_id: str, item: dict[str, t.Any]) -> ResourceLink:
    link_id = p.state.new_resource_link_id()
    link = p.state.resource_link(context_id, link_id, title=item.get("title") or "Untitled", with_line_item=False)
    link.url = item.get("url")
    link.custom = {str(k): v for k, v in (item.get("custom") or {}).items()}
    line_item = item.get("lineItem")
    created = None
    if line_item:
        created = p.state.add_line_item(
            context_id,
            line_item.get("label") or link.title,
            float(line_item["scoreMaximum"]),
            resource_id=line_item.get("resourceId"),
            tag=line_item.get("tag"),
            resource_link_id=link.id,
        )
    p.state.deep_link_items.append(
        {
            "context_id": context_id,
            "resource_link_id": link.id,
            "title": link.title,
            "url": link.url,
            "custom": link.custom,
            "line_item_id": created.id if created else None,
            "item": item,
        }
    )
    return link
