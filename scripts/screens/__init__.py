"""Screenshot scripts: each starts a lab (tests.support.stack) and a headless Chromium and saves
pictures of dashboard pages, e.g. `python -m scripts.screens.screenshots [out.png]`. Not tests.
"""
