"""Rendering: analyses → Jinja2 templates → Markdown → MkDocs site."""
