"""Deep-linking responses, built completely (pylti1p3 drops the presentation target and sends unset
fields as null): one LtiResourceLink with a line item, so the LMS creates the gradebook column, and custom
parameters that name the assignment version chosen."""

from __future__ import annotations

import time
import uuid

import jwt

from ..keys import ToolKey

DL = "https://purl.imsglobal.org/spec/lti-dl/claim/"
LTI = "https://purl.imsglobal.org/spec/lti/claim/"


def resource_link_item(title: str, url: str, points: float, resource_id: str, target: str, custom: dict) -> dict:
    """The content item; `custom` parameters come back in every launch of the link the platform makes."""
    item = {
        "type": "ltiResourceLink",
        "title": title,
        "text": f"Notebook assignment, {points:g} points, graded automatically.",
        "url": url,
        "custom": custom,
        "lineItem": {"scoreMaximum": points, "label": title, "resourceId": resource_id, "tag": "decode-grader"},
    }
    item[target] = {"width": 1000, "height": 800} if target == "iframe" else {"targetName": "_blank"}
    return item


def response_jwt(claims: dict, client_id: str, items: list[dict], key: ToolKey) -> str:
    """The signed LtiDeepLinkingResponse for the request whose claims are given."""
    settings = claims.get(DL + "deep_linking_settings", {})
    now = int(time.time())
    message = {
        "iss": client_id,
        "aud": [claims["iss"]],
        "iat": now,
        "exp": now + 600,
        "nonce": uuid.uuid4().hex,
        LTI + "message_type": "LtiDeepLinkingResponse",
        LTI + "version": "1.3.0",
        LTI + "deployment_id": claims[LTI + "deployment_id"],
        DL + "content_items": items,
    }
    if "data" in settings:
        message[DL + "data"] = settings["data"]
    return jwt.encode(message, key.signer, algorithm="RS256", headers={"kid": key.kid})


def presentation_target(claims: dict) -> str:
    """iframe when the platform accepts it (the usual LMS embedding), else a new window."""
    accepted = claims.get(DL + "deep_linking_settings", {}).get("accept_presentation_document_targets", [])
    return "iframe" if "iframe" in accepted or not accepted else "window"
