"""The LTI 1.3 core on top of pylti1p3, framework-free except for the Flask request adapter.

pylti1p3's known defects are handled here, each in one place: launch.py (replayed nonces, audience,
clock skew, JWKS caching and key rotation, timeouts), tool_conf.py (a per-instance issuer table),
storage.py (launch state kept server-side), deep_linking.py (complete content items), registration.py
(LTI Dynamic Registration, which pylti1p3 lacks).
"""
