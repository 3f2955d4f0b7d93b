"""Renderers: terminal text (rich), JSON, markdown and HTML, all from a Case."""
