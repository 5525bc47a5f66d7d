"""The pager under the paged tables (web/templates/_pager.html), as the pages render it."""

from __future__ import annotations

from web.pages.render import env


def render(page: int, pages: int, value: str) -> str:
    template = env.from_string('{% from "_pager.html" import pager %}{{ pager(page, pages, "/x?q=" ~ v ~ "&") }}')
    return template.render(page=page, pages=pages, v=value)


def test_a_middle_page_links_both_ways_with_its_other_parameters_escaped() -> None:
    html = render(2, 3, 'a&b"<')
    assert 'href="/x?q=a&amp;b&#34;&lt;&amp;page=1" rel="prev"' in html
    assert 'href="/x?q=a&amp;b&#34;&lt;&amp;page=3" rel="next"' in html
    assert "Page 2 of 3" in html


def test_the_first_and_last_pages_link_one_way_and_one_page_shows_no_pager() -> None:
    first, last = render(1, 2, "v"), render(2, 2, "v")
    assert 'rel="next"' in first and 'rel="prev"' not in first
    assert 'rel="prev"' in last and 'rel="next"' not in last
    assert render(1, 1, "v").strip() == ""
