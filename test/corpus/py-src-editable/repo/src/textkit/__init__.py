"""Small text helpers."""

from .split import rsplit_fields, split_fields

__all__ = ["split_fields", "rsplit_fields"]
