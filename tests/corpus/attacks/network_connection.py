"""Tries to reach a listener on the host's loopback (its port is passed in by the test)."""

import socket

EXPECTED_SCORE = 16
LISTENER_PORT = 0  # replaced by the test with the port of a listener it started
try:
    with socket.create_connection(("127.0.0.1", LISTENER_PORT), timeout=1) as connection:
        connection.sendall(b"exfiltrated")
    print("connected")
except OSError as error:
    print("no network:", error)
