"""The analysis wing."""
