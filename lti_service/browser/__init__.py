"""The notebook in the browser: the JupyterLite site a student opens their assignment in (site.py: its
packages, the handout's files, what the assignment needs that the browser lacks), and who a notebook window
belongs to, with the work the tool keeps for it (windows.py: sign-in by a cookie of its own, drafts)."""
