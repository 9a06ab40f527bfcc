#!/usr/bin/env bash
# `make run`: the tool on 127.0.0.1:5000 with its grading workers, and the local LTI platform on 127.0.0.2:5001
# registered with it (DYNAMIC=1: the platform registers the tool by LTI Dynamic Registration, through a
# single-use invite, when you open its /register/start page). Ctrl-C stops both and leaves nothing running.
set -euo pipefail
PY=${PY:-.venv/bin/python}
TOOL=http://127.0.0.1:5000
PLATFORM=http://127.0.0.2:5001

if [ "${DYNAMIC:-0}" = 1 ]; then
    invite=$("$PY" -m lti_service platform invite --url "$TOOL" --name "local dev platform" 2>/dev/null | head -n 1)
    platform_args=(--dynamic --tool-register-url "$invite")
    next="Register the tool first: $PLATFORM/register/start"
else
    "$PY" -m lti_service platform add --name "local dev platform" --issuer "$PLATFORM" \
        --client-id decode-grader-dev --deployment-id 1 --auth-url "$PLATFORM/auth" --token-url "$PLATFORM/token" \
        --jwks-url "$PLATFORM/.well-known/jwks.json" > /dev/null
    platform_args=()
    next="Local LMS (launch as a student or an instructor, see the gradebook): $PLATFORM/"
fi

"$PY" -m lti_dev_platform serve --host 127.0.0.2 --port 5001 --tool-url "$TOOL" "${platform_args[@]}" \
    > var/dev-platform.log 2>&1 &
platform_pid=$!
trap 'kill "$platform_pid" 2>/dev/null; wait "$platform_pid" 2>/dev/null || true' EXIT INT TERM

echo "$next"
echo "The LTI tool: $TOOL  (Canvas configuration: $TOOL/lti/canvas.json)"
echo "Press Ctrl-C to stop both."
"$PY" -m lti_service serve --host 127.0.0.1 --port 5000
