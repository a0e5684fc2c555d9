"""Every internal href/src of every HTML page of the built example resolves to a file in site/."""
from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path, PurePosixPath
from urllib.parse import unquote, urlsplit

import pytest
from conftest import BuiltSite

pytestmark = pytest.mark.slow


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.links += [value for name, value in attrs if name in ("href", "src") and value is not None]


def links_of(page: Path) -> list[str]:
    parser = _Links()
    parser.feed(page.read_text(encoding="utf-8"))
    return parser.links


def resolve(site: Path, page: Path, link: str) -> Path | None:
    """The file ``link`` on ``page`` points to, or None for external/in-page links."""
    parts = urlsplit(link)
    if parts.scheme or parts.netloc or link.startswith(("#", "data:", "mailto:", "javascript:")):
        return None
    if not parts.path:
        return None
    base = PurePosixPath(page.relative_to(site).as_posix()).parent
    target = PurePosixPath(unquote(parts.path)) if parts.path.startswith("/") else base / unquote(parts.path)
    resolved = (site / target.as_posix()).resolve()
    if parts.path.endswith("/") or resolved.is_dir():
        resolved = resolved / "index.html"
    return resolved


def test_every_internal_link_resolves(example_site: BuiltSite) -> None:
    site = example_site.site.resolve()
    pages = sorted(site.rglob("*.html"))
    assert len(pages) > 10
    broken, checked = [], 0
    for page in pages:
        for link in links_of(page):
            target = resolve(site, page, link)
            if target is None:
                continue
            checked += 1
            if not target.is_relative_to(site) or not target.is_file():
                broken.append(f"{page.relative_to(site)}: {link}")
    assert not broken, "\n".join(broken[:30])
    assert checked > 100


def test_no_link_leaves_the_site_for_assets(example_site: BuiltSite) -> None:
    """Scripts, styles and images are served by the site itself (no CDN, no web fonts)."""
    site = example_site.site
    for page in sorted(site.rglob("*.html")):
        external = [link for link in links_of(page) if urlsplit(link).scheme in ("http", "https")
                    and not link.startswith(("https://github.com/", "https://squidfunk.github.io/"))]
        assert all(not urlsplit(link).path.endswith((".js", ".css", ".woff2", ".svg", ".png"))
                   for link in external), (page, external)


def test_resolve_rejects_broken_links(tmp_path: Path) -> None:
    """The checker itself: a missing target and a link out of site/ are caught."""
    site = tmp_path / "site"
    (site / "v1").mkdir(parents=True)
    page = site / "v1" / "index.html"
    page.write_text('<a href="gone.html">x</a><img src="../../outside.png"><a href="#top">t</a>'
                    '<a href="https://example.org/x.html">e</a><a href="./">self</a>')
    results = {link: resolve(site, page, link) for link in links_of(page)}
    assert not results["gone.html"].is_file()
    assert not results["../../outside.png"].is_relative_to(site)
    assert results["#top"] is None and results["https://example.org/x.html"] is None
    assert results["./"] == (site / "v1" / "index.html").resolve()
