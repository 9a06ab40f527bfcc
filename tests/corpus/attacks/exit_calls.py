"""sys.exit in one cell; the honest answers are all there, so they keep full marks."""

import sys

EXPECTED_SCORE = 16
sys.exit("bye")
