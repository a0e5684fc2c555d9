"""Readers: one module per input format, each exposing ``READER`` (see :mod:`.base`)."""
from generator.readers.base import Reader, detect, read, readers, sniffed

__all__ = ["Reader", "detect", "read", "readers", "sniffed"]
