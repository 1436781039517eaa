"""The README is a front page: short, its two commands real, its links into docs/ alive."""

from __future__ import annotations

import re
from pathlib import Path

from site_build import REPO_ROOT

README = REPO_ROOT / "README.md"
MAX_LINES = 250
LINK = re.compile(r"\]\(([^)\s]+)\)")
# What a lab notebook cites and a user guide should not: issue numbers, branch names, commits.
NOTEBOOK_CITATION = re.compile(r"\bissue \d+\b|\bh\d\d[a-z]?\d?\b|\bcommit [0-9a-f]{7,40}\b")


def local_links(markdown: str) -> list[str]:
    """Link targets that are files in this repository (not web addresses or page anchors)."""
    targets = [match[1] for match in LINK.finditer(markdown)]
    return [t for t in targets if not re.match(r"^[a-z]+:", t) and not t.startswith("#")]


def test_the_readme_is_at_most_250_lines() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= MAX_LINES, f"README.md has {len(lines)} lines; the manual is docs/"


def test_the_readme_links_into_docs_and_every_link_resolves() -> None:
    links = local_links(README.read_text(encoding="utf-8"))
    into_docs = [link for link in links if link.startswith("docs/")]
    assert len(into_docs) >= 10, into_docs
    for link in links:
        target = (REPO_ROOT / link.split("#", 1)[0]).resolve()
        assert target.is_relative_to(REPO_ROOT), link
        assert target.is_file(), f"README.md links to {link}, which does not exist"


def test_the_two_commands_are_make_targets() -> None:
    readme = README.read_text(encoding="utf-8")
    makefile = (REPO_ROOT / "Makefile").read_text(encoding="utf-8")
    for target in ("run", "test", "docs"):
        assert f"make {target}" in readme, target
        assert re.search(rf"^{target}:", makefile, flags=re.M), f"Makefile has no `{target}:`"


def user_pages() -> list[Path]:
    return [README, *sorted((REPO_ROOT / "docs").rglob("*.md"))]


def test_user_docs_cite_no_issue_numbers_branches_or_commits() -> None:
    found = {
        str(path.relative_to(REPO_ROOT)): NOTEBOOK_CITATION.findall(path.read_text("utf-8"))
        for path in user_pages()
    }
    assert not {page: hits for page, hits in found.items() if hits}


def test_benchmark_results_name_no_branches_or_issues() -> None:
    """Results keep the commit they measured (provenance), never a branch or an issue."""
    results = REPO_ROOT / "benchmarks" / "results"
    found = {
        str(path.relative_to(results)): [
            hit
            for hit in NOTEBOOK_CITATION.findall(path.read_text("utf-8"))
            if not hit.startswith("commit")
        ]
        for path in sorted(results.rglob("*"))
        if path.suffix in {".md", ".json"}  # the .json is what a script renders the .md from
    }
    assert not {name: hits for name, hits in found.items() if hits}


def test_the_notebook_citation_pattern_catches_what_it_should() -> None:
    for text in ("see issue 12", "the h12c branch", "tree h11c", "main at commit dbb78f1"):
        assert NOTEBOOK_CITATION.search(text), text
    for text in ("http 404", "CartPole-v1", "a 64x64 network", "1e6 steps", "h1 heading"):
        assert not NOTEBOOK_CITATION.search(text), text
