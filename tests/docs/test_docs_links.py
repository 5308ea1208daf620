"""The docs hold together: every relative link in README.md and docs/*.md reaches a file of the
repository (and, with ``#anchor``, a heading of that file), and no doc points outside the
repository (to a design document or research notes the reader does not have).

The checker is tried first on small made-up docs whose broken links are known, so a checker that
found nothing could not pass."""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

import pytest
from paths import ROOT

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# Files that are not in the repository: a reader of the docs cannot open them.
OUTSIDE = re.compile(r"DESIGN\.md|DESIGN §|shared/research|research/cost-data|/work/")

FENCE = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)
CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1", re.S)
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$", re.M)
HTML_ID = re.compile(r"<a\s+(?:id|name)=\"([^\"]+)\"")


def prose(text: str) -> str:
    """The Markdown with fenced code blocks and code spans blanked (a link inside code is text)."""
    text = FENCE.sub("", text)
    return CODE_SPAN.sub("code", text)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped (letters, digits, ``-`` and
    ``_`` kept), spaces as hyphens; inline Markdown (code ticks, emphasis, link targets) removed."""
    heading = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    heading = heading.replace("`", "").lower().strip()
    kept = "".join(c for c in heading
                   if c in " -_" or unicodedata.category(c)[0] in "LN")
    return kept.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every anchor a link into ``path`` may name: its headings' slugs (a repeated heading's
    second slug ends in ``-1``, as on GitHub) and explicit ``<a id=…>``."""
    text = FENCE.sub("", path.read_text(encoding="utf-8"))
    seen: dict[str, int] = {}
    out = set(HTML_ID.findall(text))
    for h in HEADING.findall(text):
        s = slug(h)
        n = seen.get(s, 0)
        out.add(s if n == 0 else f"{s}-{n}")
        seen[s] = n + 1
    return out


def broken_links(doc: Path, root: Path) -> list[str]:
    """The relative links of ``doc`` that miss: no such file, a target outside ``root``, or an
    anchor the target has no heading for. Web and mail links are not followed."""
    problems = []
    for target in LINK.findall(prose(doc.read_text(encoding="utf-8"))):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):  # http:, https:, mailto:
            continue
        file_part, _, anchor = target.partition("#")
        where = (doc.parent / file_part).resolve() if file_part else doc
        if root.resolve() not in where.parents and where != root.resolve():
            problems.append(f"{doc.name}: {target} leaves the repository")
        elif not where.exists():
            problems.append(f"{doc.name}: {target}: no such file")
        elif anchor and where.suffix == ".md" and anchor not in anchors(where):
            problems.append(f"{doc.name}: {target}: no heading #{anchor} in {where.name}")
    return problems


def outside_mentions(doc: Path) -> list[str]:
    """Lines of ``doc`` naming a file that is not in the repository."""
    return [f"{doc.name}:{i}: {line.strip()}" for i, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1)
            if OUTSIDE.search(line)]


def test_the_checker_finds_what_is_broken(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# Title\n\n## Time and dollars: to a `target`\n\nText.\n")
    (tmp_path / "docs" / "pic.png").write_bytes(b"")
    readme = tmp_path / "README.md"
    readme.write_text(
        "[ok](docs/a.md) [ok anchor](docs/a.md#time-and-dollars-to-a-target) ![ok](docs/pic.png)\n"
        "[web](https://example.com/x.md) [self](#readme-heading)\n\n# README heading\n\n"
        "[gone](docs/b.md) [bad anchor](docs/a.md#nowhere) [outside](../elsewhere.md)\n"
        "`[in code](docs/c.md)`\n\n```\n[in a fence](docs/d.md)\n```\n"
        "See DESIGN.md section 3 and shared/research/cost-data.md.\n")
    assert broken_links(readme, tmp_path) == [
        "README.md: docs/b.md: no such file",
        "README.md: docs/a.md#nowhere: no heading #nowhere in a.md",
        "README.md: ../elsewhere.md leaves the repository",
    ]
    assert [m.split(":")[1] for m in outside_mentions(readme)] == ["12"]


def test_slugs_as_github_makes_them():
    assert slug("Time and dollars to a target score") == "time-and-dollars-to-a-target-score"
    assert slug("Model your own lab (10 minutes)") == "model-your-own-lab-10-minutes"
    assert slug("`costsim run` — the CLI") == "costsim-run--the-cli"


def test_the_docs_exist():
    names = {p.name for p in DOCS}
    assert {"README.md", "architecture.md", "scenarios.md", "model.md", "decisions.md", "changelog.md"} <= names


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_relative_link_reaches_a_file_and_its_anchor(doc):
    assert broken_links(doc, ROOT) == []


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_no_doc_names_a_file_outside_the_repository(doc):
    assert outside_mentions(doc) == []
