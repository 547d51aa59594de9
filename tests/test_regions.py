"""Marker parsing and rendering, written as before/after strings."""

import pytest

from builder import regions
from builder.regions import RegionError, digest


def fill(text: str, bodies: dict[str, str]) -> str:
    """Render ``text`` with a fixed body per region key."""
    return regions.render(text, lambda r: bodies[r.key], "nb.py")


def test_render_fills_an_empty_region_and_records_its_digest():
    before = "x = 1\n# builder:begin inline f\n# builder:end\ny = 2\n"
    body = "def f():\n    return 1\n"
    after = fill(before, {"inline f": body})
    assert after == f"x = 1\n# builder:begin inline f\n{body}# builder:end sha256={digest(body)}\ny = 2\n"


def test_render_replaces_an_old_body():
    old, new = "old\n", "new\n"
    before = f"# builder:begin inline f\n{old}# builder:end sha256={digest(old)}\n"
    assert fill(before, {"inline f": new}) == f"# builder:begin inline f\n{new}# builder:end sha256={digest(new)}\n"


def test_render_is_idempotent():
    once = fill("a\n# builder:begin inline f\n# builder:end\nb\n", {"inline f": "body\n"})
    assert fill(once, {"inline f": "body\n"}) == once


def test_markdown_markers_stay_html_comments():
    before = "# %% [markdown]\n# <!-- builder:begin header -->\n# <!-- builder:end -->\n"
    body = "# # Title\n"
    after = fill(before, {"header": body})
    assert after == f"# %% [markdown]\n# <!-- builder:begin header -->\n{body}# <!-- builder:end sha256={digest(body)} -->\n"


def test_parse_reports_kind_name_lines_and_body():
    text = "1\n# builder:begin frozen module3\nA = 1\n# builder:end\n"
    [region] = regions.parse(text)
    assert (region.kind, region.arg, region.begin_line, region.end_line, region.body) == ("frozen", "module3", 2, 4, "A = 1\n")
    assert region.key == "frozen module3" and not region.markdown


def test_render_adds_a_missing_final_newline_to_a_body():
    rendered = fill("# builder:begin inline f\n# builder:end", {"inline f": "x"})
    assert rendered == "# builder:begin inline f\nx\n# builder:end sha256=" + digest("x\n")


def test_hand_edit_is_detected_by_the_digest():
    built = fill("# builder:begin inline f\n# builder:end\n", {"inline f": "return 1\n"})
    edited = built.replace("return 1", "return 2")
    assert regions.hand_edited(regions.parse(built)) == []
    [region] = regions.hand_edited(regions.parse(edited))
    assert region.arg == "f"


def test_a_fresh_marker_without_digest_is_not_a_hand_edit():
    assert regions.hand_edited(regions.parse("# builder:begin inline f\nanything\n# builder:end\n")) == []


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ("a\n# builder:begin inline f\nb\n", 2, "no end marker"),
        ("# builder:end\n", 1, "without a begin marker"),
        ("# builder:begin inline f\n# builder:begin inline g\n# builder:end\n# builder:end\n", 2, "nested region"),
        ("# builder:begin inline f\n# builder:end\n# builder:begin inline f\n# builder:end\n", 3, "duplicate region 'inline f'"),
        ("# builder:begin teleport f\n# builder:end\n", 1, "unknown region kind"),
        ("# builder:begin inline f g\n# builder:end\n", 1, "at most one name"),
        ("# builder:begin inline f\n# builder:end sha256=xyz\n", 2, "64 hex digits"),
    ],
)
def test_malformed_regions_name_file_and_line(text, line, words):
    with pytest.raises(RegionError) as info:
        regions.parse(text, "notebooks/x.py")
    assert str(info.value).startswith(f"notebooks/x.py({line}): ")
    assert words in str(info.value)


def test_as_markdown_prefixes_every_line():
    assert regions.as_markdown("# Title\n\ntext\n") == "# # Title\n#\n# text\n"
