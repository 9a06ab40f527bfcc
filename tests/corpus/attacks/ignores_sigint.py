"""A cell that never ends and ignores SIGINT and SIGTERM, so an interrupt cannot stop it."""

import signal

EXPECTED_SCORE = 16
signal.signal(signal.SIGINT, signal.SIG_IGN)
signal.signal(signal.SIGTERM, signal.SIG_IGN)
while True:
    try:
        pass
    except BaseException:
        pass
