"""The one real-browser smoke test: JupyterLab in Debian's chromium, driven by Playwright."""
