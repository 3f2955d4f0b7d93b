"""ab's "Length" failures, told for what they are.

ab (support/ab.c, close_connection) counts a reply whose body is not as
long as the first reply's as a failed request of kind Length.  That is a
page that varies (a timestamp, a session token, a form's CSRF field) as
often as a failure; and a connection closed before any byte (a TLS
handshake that failed, a server that hung up) is a Length failure too,
its body 0 bytes long.  The bytes ab received (``HTML transferred``
against ``Document Length`` times the requests) say which it was.
"""
from __future__ import annotations

#: Of the bytes the failures would hold as whole documents, a share missing
#: above this says most came back empty; at or above the second, all of them.
MOSTLY_EMPTY = 0.5
ALL_EMPTY = 0.9


def report_figure(report: dict, key: str) -> float:
    """A parsed load-test report's figure as a float, 0 when absent or not a
    number (a report states only what its tool printed)."""
    try:
        return float(report.get(key) or 0.0)
    except (TypeError, ValueError):
        return 0.0


def missing_share(report: dict, failed: float):
    """Of the bytes ab's Length failures would hold had each been a whole
    document, the share missing from "HTML transferred" (1: every one
    empty, near 0: each a body of another length); None when the report
    lacks the figures."""
    doclen, html = report_figure(report, "document_length_bytes"), report_figure(report, "html_transferred_bytes")
    done = report_figure(report, "requests_completed")
    if doclen <= 0 or html <= 0 or done <= 0 or failed <= 0:
        return None
    return max(0.0, (done * doclen - html) / (failed * doclen))


def length_failures(report: dict, failed: float, total: float) -> tuple[bool | None, list[str]] | None:
    """For a run whose only failures are Length ones and every reply 2xx:
    ``(True, [what to say])`` when its bytes show a body for each (a page
    that varies), ``(False, [what to say])`` when they show the failures
    empty (connections closed unanswered), ``(None, [what to say])`` when
    the output lacks the byte counts to tell (a cut paste: said as
    undecided), None when the failures are failures whatever the bytes
    (handshakes that failed: said as ab counts them)."""
    handshakes_failed = report_figure(report, "ssl_handshake_failed_lines") > 0
    missing = missing_share(report, failed)
    if missing is None:
        return None if handshakes_failed else (None, [
            f"{failed:,.0f} failed, all of ab's 'Length' kind (a page that varies, or replies cut short: without "
            "'HTML transferred' the output cannot tell which)"])
    if missing >= ALL_EMPTY:
        answered = report_figure(report, "requests_completed") - failed
        return False, [f"{failed:.0f} failed: closed before any reply (ab counts them as 'Length' failures; the HTML "
                       f"transferred is that of the other {answered:,.0f})"]
    if missing > MOSTLY_EMPTY:
        return False, [f"{failed:.0f} failed: most closed before a whole reply (ab's 'Length' failures; the HTML "
                       f"transferred holds {(1 - missing) * 100:.0f} % of their bytes)"]
    if handshakes_failed:
        return None          # handshakes that failed are failures, whatever the bytes say
    of = f" ({failed / total * 100:.1f} % of {total:,.0f})" if total else ""
    return True, [f"{failed:,.0f} response(s){of} of another length than the first (ab's 'Length' failures alone, "
                  "no non-2xx reply)"]
