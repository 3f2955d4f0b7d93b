"""JSON Schemas of sarsleuth outputs (shipped as package data)."""
