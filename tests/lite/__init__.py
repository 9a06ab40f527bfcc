"""Tests of the JupyterLite site `make lite` builds (lite/build.py)."""
