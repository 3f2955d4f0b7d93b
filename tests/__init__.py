"""sarsleuth test suite."""
