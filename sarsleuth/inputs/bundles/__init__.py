"""Support bundles: sosreports, ``sos collect`` archives, ``/var/log``
tarballs and extracted sosreport folders, read in place.

``facts`` holds the host-facts model every output shows; ``archive`` streams
archive members (refusing hazards); ``layout`` knows where things live in a
bundle (data: ``knowledge/bundle_layout.toml``); ``readers`` turns
configuration files into facts; ``expand`` turns the user's paths into the
files to parse and the facts of each host.
"""
from sarsleuth.inputs.bundles.facts import HostFacts, Limit

__all__ = ["HostFacts", "Limit"]
