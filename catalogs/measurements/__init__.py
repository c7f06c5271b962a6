"""Shipped measurement table (data only): see sources.yaml."""
