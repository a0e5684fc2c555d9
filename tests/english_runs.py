"""English prose on a page of another language: runs of English words outside what may stay English
(kernel names, code, data names, and quotes marked ``lang="en"``)."""
from __future__ import annotations

import re
from html.parser import HTMLParser

#: Markdown whose text is code or page metadata: front matter, fences (also indented), inline code.
_CODE = (re.compile(r"\A---\n.*?\n---\n", re.S), re.compile(r"^[ \t]*(`{3,}).*?^[ \t]*\1", re.S | re.M),
         re.compile(r"(`+)[^`\n]*?\1"), re.compile(r"\]\([^)\s]*\)"))
#: Elements whose text may stay English: kernel names (kr-name, the raw name's details), code, charts'
#: data, and anything marked ``lang="en"`` (quotes of English documents and of other tools' text).
_KEPT_CLASSES = ("kr-name", "kr-raw-name")
_KEPT_TAGS = ("code", "pre", "script", "style", "svg")
#: Three or more Latin words in a row, one of them a word only prose has: a sentence, not a name or a type list.
_RUN = re.compile(r"[A-Za-z][A-Za-z'’-]*(?:[ ,;:()]+[A-Za-z][A-Za-z'’-]*){2,}")
_PROSE = {"a", "an", "the", "of", "in", "on", "per", "with", "is", "are", "was", "to", "and", "or", "not", "for",
          "by", "from", "its", "their", "this", "that", "which", "than", "most", "each", "every", "no", "as", "be"}


class _Text(HTMLParser):
    """The text outside kept elements."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._open: list[tuple[str, bool]] = []  # (tag, kept)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("br", "img", "input", "hr", "meta", "link", "wbr"):
            return
        values = dict(attrs)
        classes = (values.get("class") or "").split()
        kept = (tag in _KEPT_TAGS or values.get("lang") == "en" or any(c in classes for c in _KEPT_CLASSES)
                or bool(self._open and self._open[-1][1]))
        self._open.append((tag, kept))

    def handle_endtag(self, tag: str) -> None:
        for i in range(len(self._open) - 1, -1, -1):
            if self._open[i][0] == tag:
                del self._open[i:]
                break

    def handle_data(self, data: str) -> None:
        if not (self._open and self._open[-1][1]):
            self.parts.append(data)


def english_runs(markdown: str, data_words: set[str] = frozenset()) -> list[str]:
    """The English prose runs of a page's Markdown (HTML inside), data words (kernel and stage names) removed."""
    text = markdown
    for pattern in _CODE:
        text = pattern.sub(" ", text)
    parser = _Text()
    parser.feed(text)
    prose = "\n".join(parser.parts)
    for word in sorted(data_words, key=len, reverse=True):
        prose = prose.replace(word, " ")
    return [m.group(0) for m in _RUN.finditer(prose)
            if _PROSE & {w.lower() for w in re.findall(r"[A-Za-z']+", m.group(0))}]
