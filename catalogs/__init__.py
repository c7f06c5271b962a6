"""The shipped catalogs, installed inside the package as sizer.catalogs (data only)."""
