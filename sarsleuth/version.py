"""The release, on its own floor: the outputs, saved cases and the command
line say it without importing the package's face (which reaches up to the
case)."""

__version__ = "0.1.0"
