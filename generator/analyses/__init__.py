"""Analyses: pure functions over the normalized tables, one module per question."""
