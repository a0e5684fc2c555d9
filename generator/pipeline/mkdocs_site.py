"""`mkdocs build --strict` of one rendered version, reproducible (SOURCE_DATE_EPOCH = version date)."""
from __future__ import annotations

import datetime
import functools
import gzip
import html
import json
import logging
import os
import re
import shutil
import threading
from collections.abc import Callable, Collection
from pathlib import Path

import jieba
import jinja2
from mkdocs.commands.build import build as mkdocs_build
from mkdocs.config import load_config
from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import MkDocsException
from mkdocs.plugins import BasePlugin, event_priority
from mkdocs.structure.files import File, Files
from mkdocs.theme import Theme

from generator.errors import InputError
from generator.languages import LANGS
from generator.render.compiled_templates import COMPILED

# Material's search splits Chinese text with jieba, whose dictionary takes most of a second to load
# (once per process). build.render_and_build imports this module before it renders a version's
# pages: the dictionary loads meanwhile, while this process mostly waits for the chart worker
# (generator.render.svg). A copy forked while it loads would inherit jieba's lock held by a thread
# it does not have, so a fork waits for it. Its prefix dictionary is cached in the build cache's
# folder (:func:`_load_dictionary`), never in $TMPDIR.
jieba.setLogLevel(logging.CRITICAL)  # its loading lines, and a cache it could not write, are not the build's to print


def _load_dictionary() -> None:
    """jieba's dictionary, loaded from (or cached into) ``jieba/`` of the build cache folder
    (build_cache.default_root); with the cache off, built from jieba's word list, no file written."""
    from generator.pipeline.build_cache import default_root

    root = default_root()
    if root is not None:
        try:
            (root / "jieba").mkdir(parents=True, exist_ok=True)
            jieba.dt.tmp_dir = str(root / "jieba")
            jieba.initialize()
            return
        except OSError:
            pass
    with jieba.dt.lock:
        if not jieba.dt.initialized:
            jieba.dt.FREQ, jieba.dt.total = jieba.dt.gen_pfdict(jieba.dt.get_dict_file())
            jieba.dt.initialized = True


_DICTIONARY = threading.Thread(target=_load_dictionary, name="jieba-dictionary", daemon=True)
_DICTIONARY.start()
os.register_at_fork(before=_DICTIONARY.join)


def build_version_site(mkdocs_yml: Path, site_dir: Path, date: datetime.date, *, late: Collection[Path] = (),
                       before_late: Callable[[], None] = lambda: None) -> None:
    """`mkdocs build --strict` of one version into ``site_dir`` (less its 404 page); InputError with
    the warnings if it fails. The docs' files ``late`` (chart SVGs still being drawn: empty files
    stand there meanwhile) are copied after every language is built, once ``before_late()``
    returns, where and as MkDocs would have copied them."""
    epoch = int(datetime.datetime.combine(date, datetime.time(), datetime.UTC).timestamp())
    collected = _WarningCollector()
    logger = logging.getLogger("mkdocs")
    logger.addHandler(collected)
    saved_epoch = os.environ.get("SOURCE_DATE_EPOCH")
    os.environ["SOURCE_DATE_EPOCH"] = str(epoch)
    try:
        config = load_config(config_file=str(mkdocs_yml), site_dir=str(site_dir), strict=True)
        hooks = _BuildHooks(late)
        config.plugins["kr-build-hooks"] = hooks
        mkdocs_build(config)
        before_late()
        hooks.copy_late()
        # A 404 page only works at the root of a host; in a version folder its links point nowhere.
        (site_dir / "404.html").unlink(missing_ok=True)
        _sitemaps(site_dir, config, epoch)
        _search_indexes(site_dir, config)
        _segment_whole_queries(site_dir)
    except (MkDocsException, SystemExit) as exc:
        problems = "; ".join(collected.messages) or str(exc)
        raise InputError(mkdocs_yml, f"mkdocs build --strict failed: {problems}") from None
    finally:
        logger.removeHandler(collected)
        if saved_epoch is None:
            os.environ.pop("SOURCE_DATE_EPOCH", None)
        else:
            os.environ["SOURCE_DATE_EPOCH"] = saved_epoch


def _search_indexes(site_dir: Path, config: MkDocsConfig) -> None:
    """One search index per language: Material's ``search/search_index.json`` holds every language's
    pages; it keeps the default language's, and ``search/search_index.<lang>.json`` gets each other
    language's (its pages' locations start with ``<lang>/``; overrides/main.html points that
    language's pages at it)."""
    path = site_dir / "search" / "search_index.json"
    if not path.is_file():
        return
    index = json.loads(path.read_text(encoding="utf-8"))
    others = [lang.locale for lang in config.plugins["i18n"].config.languages if not lang.default]

    def of(lang: str | None) -> dict:
        docs = [d for d in index["docs"] if (lang and d["location"].startswith(f"{lang}/"))
                or (lang is None and not d["location"].startswith(tuple(f"{o}/" for o in others)))]
        return {**index, "docs": docs}  # the same lunr languages: names in a ZH page are English words

    for lang in others:
        (path.parent / f"search_index.{lang}.json").write_text(json.dumps(of(lang), ensure_ascii=False),
                                                                encoding="utf-8")
    path.write_text(json.dumps(of(None), ensure_ascii=False), encoding="utf-8")


#: Material's search worker splits a Chinese query into words of the index, longest first, but tries
#: only words that end before the query's last character: a two-character word became its first
#: character, which (as a prefix) found every word starting with it (tests/test_search_worker.py has
#: the examples). Its loop, minified, with the bound fixed to take the query's end too.
_SEGMENT_LOOP = re.compile(r"for\(let (\w)=(\w)\+1;\1<(\w)\.length;\1\+\+\)\3\.slice\(\2,\1\)in \w")


def _segment_whole_queries(site_dir: Path) -> None:
    """Material's search worker in ``site_dir`` with its Chinese query segmentation fixed
    (:data:`_SEGMENT_LOOP`); RuntimeError if the worker no longer has that loop once."""
    for worker in sorted((site_dir / "assets" / "javascripts" / "workers").glob("search.*.min.js")):
        text = worker.read_text(encoding="utf-8")
        fixed, count = _SEGMENT_LOOP.subn(lambda m: m[0].replace(f"{m[1]}<", f"{m[1]}<=", 1), text)
        if count != 1:
            raise RuntimeError(f"{worker}: {count} Chinese query segmentation loops, expected 1 (Material changed?)")
        worker.write_text(fixed, encoding="utf-8")


def _sitemaps(site_dir: Path, config: MkDocsConfig, epoch: int) -> None:
    """Fix up the version's sitemap for Material and for sitemap readers.

    With a site URL the version root itself is listed too: Material's version selector keeps the
    reader on the same page only when the common prefix of the target version's sitemap entries
    is an entry (it is with directory URLs, not with ``use_directory_urls: false``). Without a
    site URL there is no sitemap (entries must be absolute; i18n's would say "None…"), and
    overrides/main.html hands Material an empty one where it would fetch it.
    Material fetches sitemap.xml next to each language alternate too, so ``<lang>/`` gets a copy.
    """
    sitemap = site_dir / "sitemap.xml"
    if not config.site_url:
        sitemap.unlink()
        (site_dir / "sitemap.xml.gz").unlink()
        return
    text = sitemap.read_text(encoding="utf-8")
    opening = re.search(r"<urlset[^>]*>\n", text)
    if opening is None:
        raise RuntimeError(f"{sitemap}: no <urlset> line (mkdocs' and i18n's templates write one)")
    root = f"    <url>\n        <loc>{html.escape(config.site_url)}</loc>\n    </url>\n"
    text = text[: opening.end()] + root + text[opening.end():]
    sitemap.write_text(text, encoding="utf-8")
    (site_dir / "sitemap.xml.gz").write_bytes(gzip.compress(text.encode("utf-8"), mtime=epoch))
    for lang in config.plugins["i18n"].config.languages:
        if not lang.default:
            for name in ("sitemap.xml", "sitemap.xml.gz"):
                shutil.copyfile(site_dir / name, site_dir / lang.locale / name)


def compile_theme() -> None:
    """Compile Material's templates into the shared cache now: a worker forked afterwards builds
    its versions without compiling them. Of its 69 language partials only the site's are used."""
    env = Theme(name="material").get_env()
    env.bytecode_cache = COMPILED
    partials = tuple(f"partials/languages/{lang}.html" for lang in LANGS)
    for name in env.list_templates(filter_func=lambda n: n.endswith(".html") and (
            not n.startswith("partials/languages/") or n in partials)):
        try:
            env.get_template(name)
        except jinja2.TemplateAssertionError:  # needs another plugin's filters (the blog's): not ours
            pass


class _BuildHooks(BasePlugin):
    """Added to the loaded config (not to mkdocs.yml): the theme environment reuses the templates
    compiled by the builds before it, and the copies of the ``late`` files MkDocs makes (at each
    language's build) are kept for :meth:`copy_late` instead."""

    def __init__(self, late: Collection[Path]) -> None:
        super().__init__()
        self.late = {os.path.realpath(path) for path in late}
        self.kept: list[tuple[File, bool]] = []

    @event_priority(100)
    def on_env(self, env: jinja2.Environment, /, *, config: MkDocsConfig, files: Files) -> jinja2.Environment:
        for file in files:  # MkDocs copies the static files right after this event
            if file.abs_src_path is not None and os.path.realpath(file.abs_src_path) in self.late:
                file.copy_file = functools.partial(self._keep, file)  # type: ignore[method-assign]
        env.bytecode_cache = COMPILED
        return env

    def _keep(self, file: File, dirty: bool = False) -> None:
        self.kept.append((file, dirty))

    def copy_late(self) -> None:
        """The copies kept, made now."""
        for file, dirty in self.kept:
            File.copy_file(file, dirty)


class _WarningCollector(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(" ".join(record.getMessage().split()))
