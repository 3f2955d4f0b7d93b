"""The inputs wing."""
