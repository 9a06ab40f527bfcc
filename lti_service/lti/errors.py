"""Every way a launch can be refused: what failed, in the words of whoever launched (a student, a teacher),
and what the LMS administrator should check, in theirs. What only the tool's operator can change is named
as their task, never as their command or setting (those are in the README and the log)."""

from __future__ import annotations

# code: (HTTP status, what failed, what the LMS administrator should check)
REASONS: dict[str, tuple[int, str, str]] = {
    "missing_state": (
        400,
        "The launch arrived without its login state.",
        "The LMS must send both id_token and state to the tool's launch URL after the login step (LTI 1.3).",
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
        "Your course platform is not set up to use this tool yet.",
        "This LMS (its issuer and client ID) is not registered with the tool. Ask the tool's operator for a "
        "registration URL and add the tool with it (Moodle: Site administration, Plugins, External tool, Manage "
        "tools, Tool URL; Canvas: Developer Keys, LTI Registration), or send them the issuer and client ID.",
    ),
    "unknown_deployment": (
        400,
        "This course's installation of the tool is not set up yet.",
        "The tool knows this LMS but not this deployment of the tool in it. Send the deployment ID the LMS shows "
        "for the tool to the tool's operator, who adds it to the registration.",
    ),
    "unknown_kid": (
        400,
        "The launch was signed with a key the platform does not publish.",
        "Check that the public keyset URL the tool's operator registered for this LMS is current (Moodle: "
        "/mod/lti/certs.php; Canvas: its fixed keyset URL).",
    ),
    "jwks_unreachable": (
        502,
        "The platform's public keys could not be fetched.",
        "The tool could not reach this LMS's public keyset URL: check that the LMS is reachable from the tool's "
        "server (network, TLS certificate) and that the URL the tool's operator registered is right.",
    ),
    "bad_signature": (
        400,
        "The launch message's signature is not valid.",
        "The message was altered or signed with another key. Check the LMS's public keyset URL that the tool's "
        "operator registered.",
    ),
    "wrong_audience": (
        400,
        "The launch message is addressed to another tool.",
        "The client ID the LMS shows for this tool differs from the one registered with the tool: send it to the "
        "tool's operator.",
    ),
    "expired": (
        400,
        "The launch message has expired.",
        "Launch again. If it keeps happening, check the clocks of the platform and tool servers (NTP).",
    ),
    "not_yet_valid": (
        400,
        "The launch message is dated in the future.",
        "The LMS's and the tool's server clocks differ by more than a few seconds: check that both keep time (NTP).",
    ),
    "bad_message": (
        400,
        "The launch message is not one this tool understands.",
        "Check that the tool is set up as an LTI 1.3 tool and that its placement sends a resource link launch or "
        "a deep linking request (content selection).",
    ),
    "login_too_large": (
        413,
        "The login request from your course platform is too large.",
        "Each login parameter the LMS sends may have at most 2048 characters (16 KB in all); check what it sends "
        "as login_hint and lti_message_hint.",
    ),
    "login_rate_limited": (
        429,
        "Too many logins from your network are waiting to complete. Try again in a few minutes.",
        "Too many logins from one network address are pending (they expire after 10 minutes). If a whole "
        "class shares one address, ask the tool's operator to raise the per-address limit, or to tell clients "
        "apart behind their reverse proxy.",
    ),
    "login_busy": (
        429,
        "Too many logins are waiting to complete. Try again in a few minutes.",
        "The tool holds as many pending logins as it allows (a flood of logins that never complete?); they "
        "expire after 10 minutes. The tool's operator can find the clients' addresses in its log.",
    ),
    "login_invalid": (
        400,
        "The login request from your course platform is incomplete or from a platform the tool does not know.",
        "The login step needs iss, login_hint and target_link_uri (and client_id when an issuer has several "
        "registrations) from an LMS registered with the tool.",
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
        "course, or an edited custom parameter), or it was added without choosing an assignment and the default "
        "one was removed. Course staff can add the assignment to this course and choose it again for this link "
        "(Moodle: Select content; Canvas: the assignment's external tool).",
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
