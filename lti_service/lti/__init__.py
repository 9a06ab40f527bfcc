"""The LTI 1.3 core on top of pylti1p3.

pylti1p3's known defects are handled here, each in one place: launch.py (replayed nonces, audience,
clock skew, JWKS caching and key rotation, timeouts), tool_conf.py (a per-instance issuer table),
storage.py (launch state kept server-side), deep_linking.py (complete content items), registration.py
(LTI Dynamic Registration, which pylti1p3 lacks).

What real platforms and browsers need, each in one place too: login.py and cookies.py (the OIDC login
where third-party cookies are blocked: partitioned cookies, platform storage, a new window; single-use
hints), roles.py (every role form, Moodle's short names included), lineitems.py (what the platform's
AGS grant allows for a link's scores), canvas.py (hosted Canvas's endpoints), quirks.py (what Canvas and
Moodle do with a score: the refusals they answer, Canvas's submission time).

The services a launch grants: ags.py (Assignment and Grade Services: tokens, line items, scores) and
nrps.py (the course roster); outbound.py sends every request to a platform.

This package speaks only LTI: it imports nothing of the tool's domain (links, submissions, gradebook,
assignments), only the database tables and keys beneath it; what it needs of the rest it takes as arguments
or small interfaces (tool_conf.Platforms, launch.LaunchServices). tests/test_layout.py keeps it so.
"""
