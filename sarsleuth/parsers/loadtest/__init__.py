"""Load-test reports (ab, wrk, wrk2, httperf, tsar), read with lark grammars."""
