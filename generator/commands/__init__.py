"""Subcommands of `python -m generator`, one module each."""
