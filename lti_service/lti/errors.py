"""Every way a launch can be refused: what failed, for the user, and what an administrator should check."""

from __future__ import annotations

# code: (HTTP status, what failed, what an administrator should check)
REASONS: dict[str, tuple[int, str, str]] = {
    "missing_state": (
        400,
        "The launch arrived without its login state.",
        "The platform must POST both id_token and state to the tool's launch URL after the OIDC login.",
    ),
    "state_mismatch": (
        400,
        "The launch does not belong to the login that this browser started.",
        "Start the launch again from the course; if it persists, check that the tool's URL is the same "
        "in the login and redirect URLs registered on the platform.",
    ),
    "replayed_nonce": (
        400,
        "This launch message was already used (or its nonce is unknown).",
        "Launch messages are single-use. Launch again from the course. Repeated failures can mean a "
        "proxy or browser re-sending the form.",
    ),
    "unknown_issuer": (
        400,
        "This platform (issuer and client id) is not registered with the tool.",
        "Register the platform: `python -m lti_service platform add ...` or LTI Dynamic Registration.",
    ),
    "unknown_deployment": (
        400,
        "This deployment of the tool is not registered.",
        "Add the deployment id shown by the platform: `python -m lti_service platform add ... "
        "--deployment-id ID` for the same issuer and client id.",
    ),
    "unknown_kid": (
        400,
        "The launch was signed with a key the platform does not publish.",
        "Check the platform's JWKS URL registered with the tool and that the platform's keys are current.",
    ),
    "jwks_unreachable": (
        502,
        "The platform's public keys could not be fetched.",
        "Check that the tool can reach the platform's JWKS URL (network, TLS, URL registered with the tool).",
    ),
    "bad_signature": (
        400,
        "The launch message's signature is not valid.",
        "The message was altered or signed with another key. Check the platform's JWKS URL.",
    ),
    "wrong_audience": (
        400,
        "The launch message is addressed to another tool (audience does not match the client id).",
        "Check the client id registered with the tool against the one the platform shows.",
    ),
    "expired": (
        400,
        "The launch message has expired.",
        "Launch again. If it keeps happening, check the clocks of the platform and tool servers (NTP).",
    ),
    "not_yet_valid": (
        400,
        "The launch message is dated in the future.",
        "The platform's and tool's clocks differ by more than the tolerated skew (CLOCK_SKEW); check NTP.",
    ),
    "bad_message": (
        400,
        "The launch message is malformed or not an LTI 1.3 message this tool accepts.",
        "Check that the placement sends an LtiResourceLinkRequest or LtiDeepLinkingRequest (LTI 1.3).",
    ),
    "login_too_large": (
        413,
        "The login request from the platform is too large.",
        "Each OIDC login parameter may have at most 2048 characters (16 KB in all); check what the platform "
        "sends as login_hint and lti_message_hint.",
    ),
    "login_rate_limited": (
        429,
        "Too many logins from your network are waiting to complete. Try again in a few minutes.",
        "More than LOGIN_LIMIT_PER_CLIENT logins from one address are pending (they expire after 10 minutes). "
        "Behind a reverse proxy set TRUST_PROXY=1 so that clients are told apart; raise the limit if one "
        "network's users reach it.",
    ),
    "login_busy": (
        429,
        "Too many logins are waiting to complete. Try again in a few minutes.",
        "The tool holds LOGIN_LIMIT_TOTAL pending logins (a flood of anonymous logins?); they expire after 10 "
        "minutes. Check the logs for the clients' addresses.",
    ),
    "login_invalid": (
        400,
        "The login request from the platform is incomplete or from an unknown platform.",
        "The OIDC login needs iss, login_hint and target_link_uri (and client_id when an issuer has "
        "several registrations) from a registered platform.",
    ),
    "login_expired": (
        400,
        "This login has expired, or this step of it was already used.",
        "Open the assignment again from the course: a launch must complete within 10 minutes of opening it, "
        "and each of its pages works once.",
    ),
    "assignment_unavailable": (
        403,
        "This link's assignment is not available to this course.",
        "The link names an assignment version that does not exist or that belongs to another course (a copied "
        "course, or an edited custom parameter `assignment_version`), or it was added without deep linking and "
        "the built-in assignment was removed. Course staff can add the assignment to this course and choose it "
        "with deep linking.",
    ),
}

# pylti1p3's messages (checked in its source) for the checks this tool leaves to it.
PYLTI1P3_MESSAGES = {
    "Registration not found": "unknown_issuer",
    "Client id not registered": "unknown_issuer",
    "Unable to find deployment": "unknown_deployment",
    "Invalid id_token": "bad_message",
    "Invalid JWT format": "bad_message",
    "message type": "bad_message",
    "validation failed": "bad_message",
    "Validator conflict": "bad_message",
}


class LaunchError(Exception):
    """A refused launch or login; rendered as a 4xx page and a structured log line."""

    def __init__(self, code: str, detail: str = "") -> None:
        self.code, self.detail = code, detail
        self.status, self.what, self.admin_hint = REASONS[code]
        super().__init__(f"{code}: {self.what}")

    @classmethod
    def from_pylti1p3(cls, error: Exception) -> LaunchError:
        message = str(error)
        for fragment, code in PYLTI1P3_MESSAGES.items():
            if fragment in message:
                return cls(code, message)
        return cls("bad_message", message)
