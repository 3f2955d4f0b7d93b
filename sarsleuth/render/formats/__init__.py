"""The output formats, one module each, named after the format (``--format NAME``);
the registry in :mod:`sarsleuth.render` lists them from their source."""
