"""A small LTI 1.3 platform (an LMS stand-in) for trying and testing the LTI tool without a real LMS."""

from lti_dev_platform.app import create_app
from lti_dev_platform.settings import PlatformSettings

__all__ = ["PlatformSettings", "create_app"]
