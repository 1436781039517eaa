"""Finding 4: the report renderer produces no markup from its input, checked on an XSS
corpus in real Chromium (no Content-Security-Policy to help: the renderer alone holds), and
every page the server sends carries a strict CSP."""

from __future__ import annotations

import threading
from html.parser import HTMLParser
from http.server import BaseHTTPRequestHandler, HTTPServer

import httpx
import pytest

from ppo_platform.api.dashboard.markdown import render

# The payload, then the classic shapes (OWASP's filter evasion cheat sheet, trimmed):
# each calls xss() if any markup, handler or URL from it ever runs.
CORPUS = [
    "![[t](http://x/y)](http://x/onerror=xss())",
    "![[t](http://x/y)](http://x/onerror=xss``//)",  # runs in the old renderer
    '![[t](http://x/y)](http://x/"onerror=xss()//)',
    "| value |\n|---|\n| ![[t](http://x/y)](http://x/onerror=xss()) |",
    "<script>xss()</script>",
    "<img src=x onerror=xss()>",
    "<svg onload=xss()>",
    '<a href="javascript:xss()">x</a>',
    "[x](javascript:xss())",
    "[x](JaVaScRiPt:xss())",
    "[x](&#106;avascript:xss())",
    "[x](data:text/html;base64,PHNjcmlwdD54c3MoKTwvc2NyaXB0Pg==)",
    "![x](javascript:xss())",
    '![x" onerror="xss()](http://x/y.png)',
    '![x](http://x/y.png"onerror="xss())',
    "[<img src=x onerror=xss()>](http://x)",
    "**<iframe src=javascript:xss()>**",
    "`<script>xss()</script>`",
    "```\n</code></pre><script>xss()</script>\n```",
    "# <body onload=xss()>",
    "- <details open ontoggle=xss()>",
    "[x](http://x/&quot;onmouseover=&quot;xss())",
    '<style>*{background:url("javascript:xss()")}</style>',
    "&lt;script&gt;xss()&lt;/script&gt;",
    "<<script>script>xss()<</script>/script>",
    '[x](http://x "title" onmouseover=xss())',
    "<math><mtext><table><mglyph><style><img src=x onerror=xss()>",
]
ALLOWED_TAGS = {"h2", "h3", "p", "ul", "li", "strong", "em", "code", "pre", "table", "thead",
                "tbody", "tr", "th", "td", "a", "img", "div"}  # fmt: skip


ALLOWED_ATTRIBUTES = {"href", "src", "alt", "rel", "scope", "style", "class"}


class Elements(HTMLParser):
    """Every element a browser would build from the HTML, with its attributes."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.found.append((tag, dict(attrs)))


@pytest.mark.parametrize("payload", CORPUS)
def test_the_renderer_writes_only_allowed_tags_and_no_handlers(payload) -> None:
    html = str(render(payload, lambda name: f"/ui/experiments/e1/artifacts/{name}"))
    parser = Elements()
    parser.feed(html)
    for tag, attrs in parser.found:
        assert tag in ALLOWED_TAGS and set(attrs) <= ALLOWED_ATTRIBUTES, (payload, html)
        for name in ("href", "src"):
            if name in attrs:
                target = attrs[name] or ""
                assert target.startswith(("http://", "https://", "/ui/experiments/")), html
        assert (attrs.get("style") or "text-align").startswith("text-align"), html


def test_no_payload_of_the_corpus_runs_in_chromium(browser) -> None:
    body = "\n\n".join(str(render(p, lambda n: f"/a/{n}")) for p in CORPUS)
    context = browser.new_context(java_script_enabled=True)
    try:
        page = context.new_page()
        page.route("**/*", lambda route: route.fulfill(status=404, body=""))
        page.set_content(
            "<!doctype html><html><head><script>window.ran = 0;"
            "function xss() { window.ran += 1; }</script></head>"
            f"<body>{body}</body></html>"
        )
        for element in page.locator("a, img").all():  # hovering fires any mouse handler
            element.hover(timeout=2000, force=True)
        page.wait_for_timeout(500)  # images fail to load: onerror would fire now
        assert page.evaluate("window.ran") == 0
    finally:
        context.close()


def test_every_page_and_response_carries_a_strict_csp_and_no_framing(server, alice) -> None:
    for path in ("/login", "/", "/submit", "/healthz", "/v1/experiments", "/nowhere"):
        response = httpx.get(server.url + path, headers=alice.headers, timeout=30)
        policy = response.headers["content-security-policy"]
        assert "script-src 'self'" in policy and "unsafe-inline" not in policy, path
        assert "frame-ancestors 'none'" in policy and "default-src 'none'" in policy
        assert response.headers["x-frame-options"] == "DENY"
        assert response.headers["x-content-type-options"] == "nosniff"


def _serve_once(html: str) -> tuple[HTTPServer, str]:
    """Another origin (a port of its own) that serves `html` for every GET."""

    class Page(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = html.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    httpd = HTTPServer(("127.0.0.1", 0), Page)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd, f"http://127.0.0.1:{httpd.server_address[1]}/"


def test_the_dashboard_cannot_be_framed_by_another_origin(browser, server, keys) -> None:
    httpd, attacker = _serve_once(f'<iframe id="f" src="{server.url}/login"></iframe>')
    context = browser.new_context()
    try:
        page = context.new_page()
        page.goto(attacker)
        page.wait_for_timeout(1500)
        urls = [frame.url for frame in page.frames[1:]]
        # Blocked: the frame holds Chromium's error page, nothing of the dashboard.
        assert urls and not any(url.startswith(server.url) for url in urls), urls
    finally:
        context.close()
        httpd.shutdown()
