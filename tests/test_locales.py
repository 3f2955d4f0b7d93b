"""Month and weekday names of other locales come from CLDR (Babel), and a
file's own names settle the ambiguous ones."""
from __future__ import annotations

import pytest

from sarsleuth.knowledge.locales import month_candidates, resolve, split_stamp_names, undecided, weekday_candidates


@pytest.mark.parametrize("token, month", [
    # what strftime("%b") gives under these locales, as journalctl and rsyslog print it
    ("avril", 4), ("avr.", 4), ("févr.", 2), ("août", 8),        # fr
    ("Mär", 3), ("März", 3), ("Okt", 10), ("Dez", 12),           # de
    ("abr", 4), ("ago", 8), ("dic", 12),                          # es / it / pt
    ("апр", 4), ("дек", 12),                                      # ru
    ("4月", 4), ("12月", 12), ("四月", 4),                          # zh / ja
    ("Nis", 4), ("Eki", 10),                                      # tr
    ("Apr", 4), ("May", 5), ("Sep", 9),                           # C locale
])
def test_month_names_of_many_locales(token, month):
    assert month in month_candidates(token)


def test_words_that_are_no_month_are_not_taken_for_one():
    for word in ("kernel", "nginx", "error", "segfault", "15:04:13", "CPU#3"):
        assert month_candidates(word) == {}


def test_weekday_names_for_dmesg_T_stamps():
    assert 3 in weekday_candidates("jeu.")      # fr: jeudi
    assert 3 in weekday_candidates("Thu")
    assert 3 in weekday_candidates("Do")        # de: Donnerstag


def test_ambiguous_names_are_settled_by_the_rest_of_the_file():
    # "lis" is listopad: November in Czech and Polish, October in Croatian
    assert resolve(["lis", "pro", "led"]) == {"lis": 11, "pro": 12, "led": 1}     # cs: listopad, prosinec, leden
    assert resolve(["lis", "stu", "pro"]) == {"lis": 10, "stu": 11, "pro": 12}    # hr: listopad, studeni, prosinac


def test_names_glibc_cuts_shorter_than_cldr_read_by_their_start():
    # uk_UA LC_TIME abmon: "кві", "тра", "чер" where CLDR writes "квіт.", "трав.", "черв."
    assert resolve(["кві", "тра", "чер", "лип"]) == {"кві": 4, "тра": 5, "чер": 6, "лип": 7}


def test_names_glibc_writes_where_cldr_differs():
    # cs_CZ LC_TIME abmon (glibc's localedata): "čen", "čec" where CLDR has "čvn", "čvc"
    assert resolve(["kvě", "čen", "čec", "srp"]) == {"kvě": 5, "čen": 6, "čec": 7, "srp": 8}
    assert month_candidates("Čen") == {6: frozenset({"cs"})}
    # tr_TR abday "Çrş" (Wednesday), el_GR abday "Πεμ" (Thursday): CLDR writes "Çar", "Πέμ"
    assert 2 in weekday_candidates("Çrş") and 3 in weekday_candidates("Πεμ")


def test_a_glibc_name_of_two_languages_is_settled_by_the_file():
    # "Sad" is November in om_ET (Sadaasa) and March in so_SO (Sadex): glibc abmon of each
    assert resolve(["Ama", "Gur", "Sad", "Mud"])["Sad"] == 11
    assert resolve(["Kob", "Lab", "Sad", "Afr"])["Sad"] == 3


def test_a_c_locale_name_is_another_month_when_the_file_says_so():
    # st_ZA abmon (glibc): "Jan" is June among the other Sotho names
    sotho = ["Phe", "Hla", "TlH", "Mme", "Mot", "Jan", "Upu", "Pha", "Leo", "Mph", "Pud", "Tsh"]
    assert resolve(sotho) == dict(zip(sotho, range(1, 13)))
    assert undecided(sotho) == {}
    # an English file keeps its January; bi_VU's "Maj" (March) stays March
    # beside the C-locale names it shares with English
    assert resolve(["Jan", "Feb", "Mär"])["Jan"] == 1
    bislama = ["Jan", "Feb", "Maj", "Epr", "Mei", "Jun", "Jul", "Ogs", "Sep", "Okt", "Nov", "Dis"]
    assert resolve(bislama) == dict(zip(bislama, range(1, 13)))


def test_a_month_the_file_cannot_settle_is_named():
    # "jui" (fr_CA July) also starts "juin": alone it is June or July
    assert undecided(["jui"]) == {"jui": [6, 7]}
    assert undecided(["mai", "jun", "jui", "aoû"]) == {} and resolve(["jun", "jui"]) == {"jun": 6, "jui": 7}
    # "Sad" alone: om_ET November, so_SO March; "mai" alone is May in 27
    # languages and August in one (trv): the languages' majority settles it
    assert undecided(["Sad"]) == {"Sad": [3, 11]}
    assert undecided(["Mai"]) == {} and resolve(["Mai"]) == {"Mai": 5}


def test_stamp_names_of_several_words_are_read_whole_longest_month_first():
    assert split_stamp_names("Thg 6") == (None, "Thg 6")             # vi_VN %b
    assert split_stamp_names("de gen.") == (None, "de gen.")         # ca_ES %b
    assert split_stamp_names("dl. de gen.") == ("dl.", "de gen.")    # ca_ES %a %b
    assert split_stamp_names("no such words") is None


def test_cldr_names_are_kept_for_the_runs_after_the_first(tmp_path, monkeypatch):
    """Reading every Babel locale takes seconds: the first run keeps the
    tables in the user's cache, later runs read them back; a damaged or
    foreign copy is built again, never trusted."""
    from sarsleuth.knowledge import locales

    monkeypatch.setenv("SARSLEUTH_CACHE_DIR", str(tmp_path))
    built = ({"dez": {12: frozenset({"pt", "gl"})}, "stycz": {1: frozenset({"pl"})}},
             {"seg": {1: frozenset({"pt"})}})
    monkeypatch.setattr(locales, "_build_cldr", lambda: built)
    assert locales._read_cldr() == built
    (kept,) = tmp_path.glob("cldr-time-names-*.json")
    assert kept.stat().st_mode & 0o077 == 0

    def never():
        raise AssertionError("built again")
    monkeypatch.setattr(locales, "_build_cldr", never)
    assert locales._read_cldr() == built              # read back, not built
    for damaged in (b'[{"dez": {"x": ["pt"]}}, {}]', b"[1, 2]", b'{"dez"'):
        kept.write_bytes(damaged)
        monkeypatch.setattr(locales, "_build_cldr", lambda: built)
        assert locales._read_cldr() == built
        monkeypatch.setattr(locales, "_build_cldr", never)
        assert locales._read_cldr() == built          # written again whole
