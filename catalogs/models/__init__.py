"""Shipped model catalog entries (data only)."""
