"""A small, escaping Markdown renderer for the platform's own reports and plans.

It knows what those files use: headings, paragraphs, bullet lists, pipe tables, fenced code,
`code`, **bold**, links and images. Every piece of text is HTML-escaped first, and an image or
link target is kept only if it is a plain file name (then served from the experiment's
artifacts) or an http(s) URL, so a report cannot inject markup.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from html import escape

from markupsafe import Markup

IMAGE = re.compile(r"!\[([^\]]*)\]\(([^)\s]+)\)")
LINK = re.compile(r"\[([^\]]+)\]\(([^)\s]+)\)")
CODE = re.compile(r"`([^`]+)`")
BOLD = re.compile(r"\*\*([^*]+)\*\*")
BULLET = re.compile(r"^\s*[-*] ")
FILE_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,200}$")


def _target(url: str, artifact_url: Callable[[str], str] | None) -> str | None:
    if url.startswith(("https://", "http://")):
        return url
    if artifact_url is not None and FILE_NAME.fullmatch(url) and ".." not in url:
        return artifact_url(url)
    return None


def inline(text: str, artifact_url: Callable[[str], str] | None = None) -> str:
    """One line of Markdown -> escaped HTML (the regexes run on already-escaped text)."""

    def image(m: re.Match[str]) -> str:
        src = _target(m[2], artifact_url)
        return f'<img src="{src}" alt="{m[1]}">' if src else m[1]

    def link(m: re.Match[str]) -> str:
        href = _target(m[2], artifact_url)
        return f'<a href="{href}">{m[1]}</a>' if href else m[1]

    out = escape(text, quote=True)
    out = IMAGE.sub(image, out)
    out = LINK.sub(link, out)
    out = CODE.sub(r"<code>\1</code>", out)
    return BOLD.sub(r"<strong>\1</strong>", out)


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def _table(lines: list[str], artifact_url: Callable[[str], str] | None) -> str:
    head, body = _cells(lines[0]), [_cells(line) for line in lines[2:]]
    th = "".join(f'<th scope="col">{inline(c, artifact_url)}</th>' for c in head)
    rows = "".join(
        "<tr>" + "".join(f"<td>{inline(c, artifact_url)}</td>" for c in cells) + "</tr>"
        for cells in body
    )
    table = f"<table><thead><tr>{th}</tr></thead><tbody>{rows}</tbody></table>"
    return f'<div class="scroll">{table}</div>'


def _until(lines: list[str], start: int, inside: Callable[[str], bool]) -> int:
    """The index of the first line from `start` that is not `inside` the block."""
    return next((j for j in range(start, len(lines)) if not inside(lines[j])), len(lines))


def render(text: str, artifact_url: Callable[[str], str] | None = None) -> Markup:
    """Markdown -> safe HTML."""
    html: list[str] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("```"):
            end = _until(lines, i + 1, lambda x: not x.startswith("```"))
            html.append("<pre><code>" + escape("\n".join(lines[i + 1 : end])) + "</code></pre>")
            i = end + 1
        elif line.startswith("|") and i + 1 < len(lines) and set(lines[i + 1]) <= set("|-: "):
            end = _until(lines, i, lambda x: x.startswith("|"))
            html.append(_table(lines[i:end], artifact_url))
            i = end
        elif heading := re.match(r"^(#{1,4}) (.*)", line):
            level = len(heading[1]) + 1  # the page's own title is the h1
            html.append(f"<h{level}>{inline(heading[2], artifact_url)}</h{level}>")
            i += 1
        elif BULLET.match(line):
            end = _until(lines, i, lambda x: bool(BULLET.match(x)))
            items = "".join(f"<li>{inline(x.strip()[2:], artifact_url)}</li>" for x in lines[i:end])
            html.append(f"<ul>{items}</ul>")
            i = end
        elif line.strip():
            html.append(f"<p>{inline(line, artifact_url)}</p>")
            i += 1
        else:
            i += 1
    return Markup("\n".join(html))
