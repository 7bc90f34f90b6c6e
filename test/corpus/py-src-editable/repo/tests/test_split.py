import pytest

from textkit import rsplit_fields, split_fields


def test_splits_and_strips():
    assert split_fields(" a , b ,c ") == ["a", "b", "c"]


def test_keeps_empty_fields():
    assert split_fields("a,,b") == ["a", "", "b"]


def test_maxsplit_like_str_split(subtests):
    for line, n in [("a,b,c,d", 1), ("a,b,c,d", 2), ("a,b", 5), ("a,b,c", 0)]:
        with subtests.test(msg="maxsplit", line=line, n=n):
            assert split_fields(line, maxsplit=n) == [f.strip() for f in line.split(",", n)]


def test_multi_character_separator():
    assert split_fields("a :: b :: c", sep="::") == ["a", "b", "c"]


def test_empty_separator_is_refused():
    with pytest.raises(ValueError):
        split_fields("abc", sep="")


def test_rsplit_keeps_the_left_rest():
    assert rsplit_fields("a,b,c", maxsplit=1) == ["a,b", "c"]
