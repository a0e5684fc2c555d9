"""A built site served to coding agents (``python -m generator mcp SITE_DIR``): read-only, by version id."""
