"""A built documentation site and the helpers the tests read it with."""

from __future__ import annotations

import html
import re
from html.parser import HTMLParser
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]


class SiteBuild:
    """A built site: its folder and the build's output."""

    def __init__(self, folder: Path, output: str) -> None:
        self.folder = folder
        self.output = output

    def page(self, name: str) -> str:
        """The HTML of `docs/<name>.md` (MkDocs writes it as <name>/index.html)."""
        return (self.folder / name / "index.html").read_text(encoding="utf-8")

    def text(self, name: str) -> str:
        """The visible text of a page's article, tags stripped, whitespace collapsed."""
        article = self.page(name).split("<article", 1)[1].split("</article>", 1)[0]
        return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", article)).split())

    def squeezed(self, name: str) -> str:
        """A page's article text with every space removed, for finding a description in it
        whatever markup (code spans, links, line breaks) the page gave it."""
        return squeeze(self.text(name))

    def sections(self, name: str) -> dict[str, str]:
        """Each h2 heading's text -> the visible text of its section (up to the next h2)."""
        article = self.page(name).split("<article", 1)[1].split("</article>", 1)[0]
        found = {}
        for chunk in article.split("<h2")[1:]:
            heading, _, body = chunk.partition("</h2>")
            title = html.unescape(re.sub(r"<[^>]+>", "", heading.split(">", 1)[1]))
            title = " ".join(title.replace("¶", "").split())
            found[title] = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", body)).split())
        return found

    def headings(self, name: str, level: int) -> list[str]:
        collector = _HeadingText(f"h{level}")
        collector.feed(self.page(name))
        return collector.found

    def code_spans(self, name: str) -> set[str]:
        spans = re.findall(r"<code>(.*?)</code>", self.page(name), flags=re.S)
        return {html.unescape(re.sub(r"<[^>]+>", "", span)) for span in spans}


class _HeadingText(HTMLParser):
    def __init__(self, tag: str) -> None:
        super().__init__()
        self.tag, self.found, self._open = tag, [], False
        self._parts: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == self.tag:
            self._open, self._parts = True, []
        elif tag == "a" and self._open and ("class", "headerlink") in attrs:
            self._open = False  # the permalink's pilcrow is not part of the heading
            self.found.append(" ".join("".join(self._parts).split()))

    def handle_data(self, data: str) -> None:
        if self._open:
            self._parts.append(data)


def squeeze(text: str) -> str:
    """Text without whitespace or the backticks of markdown code spans."""
    return "".join(text.replace("`", "").split())
