"""A swap climb tells memory short only when the rows show it: pages
written to swap while it rose, or RAM near full.  A RHEL 4 host's swap
went from 2.47 % to 100 % in 30 minutes with 4.8 GB of RAM free and no
page written out (its sar -W at 0.00, its swap all in the swap cache), as
posted in a public thread; the near miss is the same climb paged out of a
full RAM."""
from __future__ import annotations

import sarsleuth

BANNER = "Linux 2.6.9-89.ELsmp (db4) \t03/12/2013 \t_x86_64_\t(8 CPU)\n\n"
MEMORY = """\
06:00:01 PM kbmemfree kbmemused  %memused kbbuffers  kbcached kbswpfree kbswpused  %swpused  kbswpcad
06:10:01 PM   4583856  11847032     72.10     79676    319804   8178056    207864      2.48     19816
06:20:01 PM   4720904  11709984     71.27     38840    225108   8178400    207520      2.47     19124
06:30:02 PM   4839160  11591728     70.55      1404    144948   1968152   6417768     76.53   6227068
06:40:02 PM   4827016  11603872     70.62      1640    145484     10232   8375688     99.88   8182968
06:50:02 PM   4836376  11594512     70.57       844    123304        60   8385860    100.00   8193044
07:00:01 PM   4825764  11605124     70.63       920    128108      4516   8381404     99.95   8188680
"""
SWAPPING = """\
06:00:01 PM  pswpin/s pswpout/s
06:10:01 PM      0.00      0.00
06:20:01 PM      0.00      0.00
06:30:02 PM      0.68      0.00
06:40:02 PM      1.85      0.00
06:50:02 PM      0.00      0.00
07:00:01 PM      0.00      0.00
"""


def _swap(tmp_path, text):
    (tmp_path / "sar.txt").write_text(text)
    case = sarsleuth.load(tmp_path / "sar.txt")
    (f,) = [f for f in case.findings if f.detector == "swap-climb"]
    return case, f


def test_swap_filled_without_a_page_written_out_is_no_memory_shortage(tmp_path):
    case, f = _swap(tmp_path, BANNER + MEMORY + "\n" + SWAPPING)
    assert f.severity == "low" and f.refs["no_pressure"] is True
    assert f.title == ("Swap climbed from 2.47 % to 100.00 % in 30 min (4 samples); no page written to swap "
                       "(pswpout/s at most 0.00), 8,193,044 of its 8,385,860 kB also in RAM (kbswpcad)")
    assert "nothing here shows memory short" in f.explanation
    # what the first row of the climb averages began at the row before it, as sar stamped it
    assert f.refs["sampled_from"].endswith("18:20:01")
    assert "between 2013-03-12 18:20:01 and 18:30:02" in case.incidents[0].summary
    assert not any("Do not add swap" in r for r in case.incidents[0].recommendations)


def test_without_the_page_out_rows_ram_far_from_full_is_said(tmp_path):
    case, f = _swap(tmp_path, BANNER + MEMORY)
    assert f.severity == "medium" and f.title.endswith(
        "; RAM 71.27 % used at most: the host was not short of memory (a cgroup's own limit, or swap accounting), "
        "8,193,044 of its 8,385,860 kB also in RAM (kbswpcad)")


def test_the_same_climb_paged_out_of_a_full_ram_is_critical(tmp_path):
    """Near miss: RAM 99 % used and 2,600 pages a second written out."""
    rows = MEMORY.replace("  72.10", "  99.10").replace("  71.27", "  99.27").replace("  70.55", "  99.55") \
        .replace("  70.62", "  99.62").replace("  70.57", "  99.57").replace("  70.63", "  99.63")
    paged = SWAPPING.replace("0.68      0.00", "0.68   2600.12").replace("1.85      0.00", "1.85   3228.40")
    case, f = _swap(tmp_path, BANNER + rows + "\n" + paged)
    assert f.severity == "critical" and "no_pressure" not in f.refs
    assert f.title == "Swap climbed from 2.47 % to 100.00 % in 30 min (4 samples)"
