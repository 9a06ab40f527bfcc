#!/usr/bin/env bash
# `make run`: the tool on 127.0.0.1:5000 with a worker, and the local LTI platform on 127.0.0.2:5001
# registered with it. Ctrl-C stops both and leaves nothing running.
set -euo pipefail
PY=${PY:-.venv/bin/python}
TOOL=http://127.0.0.1:5000
PLATFORM=http://127.0.0.2:5001

"$PY" -m lti_dev_platform serve --host 127.0.0.2 --port 5001 --tool-url "$TOOL" > var/dev-platform.log 2>&1 &
platform_pid=$!
trap 'kill "$platform_pid" 2>/dev/null; wait "$platform_pid" 2>/dev/null || true' EXIT INT TERM

"$PY" -m lti_service platform add --name "local dev platform" --issuer "$PLATFORM" --client-id decode-grader-dev \
    --deployment-id 1 --auth-url "$PLATFORM/auth" --token-url "$PLATFORM/token" \
    --jwks-url "$PLATFORM/.well-known/jwks.json" > /dev/null

echo "Local LMS (launch as a student or an instructor, see the gradebook): $PLATFORM/"
echo "The LTI tool: $TOOL  (Canvas configuration: $TOOL/lti/canvas.json)"
echo "Press Ctrl-C to stop both."
"$PY" -m lti_service serve --host 127.0.0.1 --port 5000
