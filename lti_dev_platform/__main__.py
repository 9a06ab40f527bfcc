import sys

from lti_dev_platform.cli import main

sys.exit(main())
