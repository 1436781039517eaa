"""The Markdown renderer for the platform's own reports and plans, safe for any input.

markdown-it-py parses the text with raw HTML turned off (`<`, `&` and quotes stay text), links
and images keep a target only if it is a plain file name (then served from the experiment's
artifacts) or an http(s) URL, and nh3 (the Ammonia sanitiser) then keeps only an allow-list
of tags and attributes. A report cannot produce markup; the page's Content-Security-Policy
would run none if it did.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache

import nh3
from markdown_it import MarkdownIt
from markdown_it.token import Token
from markupsafe import Markup

FILE_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,200}$")
ALLOWED_TAGS = {
    "h2", "h3", "h4", "h5", "h6", "p", "ul", "ol", "li", "strong", "em", "code", "pre",
    "table", "thead", "tbody", "tr", "th", "td", "a", "img", "div", "br", "hr", "blockquote",
}  # fmt: skip
ALLOWED_ATTRIBUTES = {
    "a": {"href"},
    "img": {"src", "alt"},
    "th": {"scope", "style"},
    "td": {"style"},
    "div": {"class"},
}
ALLOWED_STYLES = {"text-align"}  # a table column's alignment (markdown-it writes it inline)


def _target(url: str, artifact_url: Callable[[str], str] | None) -> str | None:
    if url.startswith(("https://", "http://")):
        return url
    if artifact_url is not None and FILE_NAME.fullmatch(url) and ".." not in url:
        return artifact_url(url)
    return None


@lru_cache(maxsize=1)
def _parser() -> MarkdownIt:
    return MarkdownIt("commonmark", {"html": False}).enable("table")


def _retarget_inline(
    children: list[Token], artifact_url: Callable[[str], str] | None
) -> list[Token]:
    """Links and images keep only targets `_target` allows; one with another target becomes
    its plain text."""
    kept: list[Token] = []
    dropped_links = 0  # link_open tokens dropped, whose link_close is dropped too
    for token in children:
        if token.type == "image":
            src = _target(str(token.attrGet("src") or ""), artifact_url)
            if src is None:
                kept.append(Token("text", "", 0, content=token.content))
                continue
            token.attrSet("src", src)
        elif token.type == "link_open":
            href = _target(str(token.attrGet("href") or ""), artifact_url)
            if href is None:
                dropped_links += 1
                continue
            token.attrSet("href", href)
        elif token.type == "link_close" and dropped_links:
            # Links do not nest in Markdown: this closes the link that was dropped.
            dropped_links -= 1
            continue
        kept.append(token)
    return kept


def _retarget(tokens: list[Token], artifact_url: Callable[[str], str] | None) -> None:
    """Inline targets checked; headings move down one level (the page's own title is the h1);
    table headers are column headers."""
    for token in tokens:
        if token.type == "inline" and token.children is not None:
            token.children = _retarget_inline(token.children, artifact_url)
        elif token.type in ("heading_open", "heading_close"):
            token.tag = f"h{min(int(token.tag[1]) + 1, 6)}"
        elif token.type == "th_open":
            token.attrSet("scope", "col")


def render(text: str, artifact_url: Callable[[str], str] | None = None) -> Markup:
    """Markdown -> safe HTML."""
    parser = _parser()
    tokens = parser.parse(text)
    _retarget(tokens, artifact_url)
    html = parser.renderer.render(tokens, parser.options, {})
    html = html.replace("<table>", '<div class="scroll"><table>').replace(
        "</table>", "</table></div>"
    )
    clean = nh3.clean(
        html,
        tags=ALLOWED_TAGS,
        attributes=ALLOWED_ATTRIBUTES,
        filter_style_properties=ALLOWED_STYLES,
        url_schemes={"http", "https"},
        link_rel="noopener noreferrer nofollow",
    )
    return Markup(clean)
