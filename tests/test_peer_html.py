"""``verify-peer --html FILE``: the grading as one self-contained page
(:mod:`rfcircuits.crosscheck.peers.report`).

The page comes from a real run of two peers made of our own engine (tests/test_promises.py):
one whose sufficient reasons lose a literal (broken promises, each with a witness world),
which fails on one row and whose name and error carry markup; one whose reasons gain a
literal but that promises no minimality (differences of definition). The page is read back
twice: by Python's HTML parser, for its structure, its escaping and the absence of anything
fetched or run; and by headless Chromium, where one is installed, for what a user opening it
sees."""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from rfcircuits.cli.main import main
from rfcircuits.crosscheck.peers.adapters.base import Answer, Task
from rfcircuits.crosscheck.peers.report import KINDS, item_text, literal_text
from tests import browser
from tests.test_formats import assert_valid
from tests.test_promises import EngineSRs

NAME = '<script>alert("peer")</script>'
ERROR = "<img src=x onerror=alert(1)> & more"
ADAPTER = "tests.test_peer_html:MarkupPeer"
LOOSE = "tests.test_peer_html:LoosePeer"


class MarkupPeer(EngineSRs):
    """Our SRs with a literal dropped; row 1 fails with an error that is markup."""

    name = NAME

    def __init__(self) -> None:
        super().__init__("drop-literal")

    def explain(self, task: Task) -> Iterator[Answer]:
        for answer in super().explain(task):
            yield Answer(0, "error", error=ERROR) if answer.index == 0 else answer


class LoosePeer(EngineSRs):
    """One SR per row with a literal too many, no minimality promised."""

    def __init__(self) -> None:
        super().__init__("add-literal", minimal="none", answers="one")


class Page(HTMLParser):
    """The parts of a page the tests look at: each element with its attributes, the text
    (its character references decoded), the text of each finding and of each section."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.open: list[tuple[str, list[str]]] = []  # (class, its text) of open containers
        self.findings: list[tuple[str, str]] = []
        self.sections: list[str] = []
        self.feed(text)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag in ("article", "section"):
            self.open.append((dict(attrs).get("class") or tag, []))

    def handle_endtag(self, tag: str) -> None:
        if tag in ("article", "section"):
            cls, text = self.open.pop()
            if tag == "article":
                self.findings.append((cls, " ".join(text)))
            else:
                self.sections.append(" ".join(text))

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        for _, text in self.open:
            text.append(data)


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """``verify-peer --json --html FILE`` with :class:`MarkupPeer` on a small iris forest:
    the page and the JSON document printed."""
    page = tmp_path_factory.mktemp("html") / "report.html"
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        code = main(["verify-peer", "--adapter", f"{ADAPTER},{LOOSE}", "--dataset", "iris",
                     "--trees", "3", "--depth", "2", "--rows", "6", "--json", "-q", "--html",
                     str(page)])
    doc = json.loads(printed.getvalue())
    assert code == 1  # promises broken
    assert_valid("verify-peer", doc, "verify-peer --json")
    return page, doc


def test_the_page_holds_the_summary_findings_and_differences(run):
    page, doc = run
    reports = doc["peers"]
    # what the page must show: broken promises with witness worlds, a failure, differences
    findings = reports[ADAPTER]["findings"]
    assert any(f["kind"] == "broken" and "world" in f.get("evidence", {}) for f in findings)
    assert [f["error"] for f in reports[ADAPTER]["failures"]] == [ERROR]
    assert reports[LOOSE]["fields"]["sufficient_reasons"]["differences"]
    parsed = Page(page.read_text(encoding="utf-8"))
    text = " ".join(parsed.text)
    for key in ("dataset", "trees", "depth", "seed", "rows"):
        assert f"{doc[key]}" in text
    # one section per peer, one article per finding, in the report's order of kinds
    assert len(parsed.sections) == len(reports) == 2
    articles = iter(parsed.findings)
    order = [kind for kind, _ in KINDS]
    for section, (name, report) in zip(parsed.sections, reports.items()):
        assert name in section and report["result"] in section
        for f in sorted(report["findings"], key=lambda f: order.index(f["kind"])):
            cls, shown = next(articles)
            assert cls == f"finding {f['kind']}"
            assert item_text(f["item"], f["field"]) in shown
            assert f"data row {f['data_row']}" in shown and f["promise"] in shown
            for feature, value in (f["values"] or {}).items():
                assert feature in shown and json.dumps(value) in shown
            for state in f.get("evidence", {}).get("world", {}).values():
                assert state in shown
            for cls, votes in f.get("evidence", {}).get("votes", {}).items():
                assert f"{cls} {json.dumps(votes)}" in shown
        # each field's counts, and each difference of definition with its count and first item
        for field, tally in report["fields"].items():
            assert f"{field} {tally['promise']['guarantee']}" in section
            assert tally["completeness"] in section
            for kind, count in tally["differences"].items():
                assert f"{field} {kind} {count}" in section
                first = next(i for i in report["items"] if kind in i["differences"])
                assert item_text(first["item"], field) in section
    assert next(articles, None) is None


def test_every_string_is_escaped_and_nothing_is_fetched_or_run(run):
    page, doc = run
    source = page.read_text(encoding="utf-8")
    parsed = Page(source)
    # the peer's name and error, markup in the JSON, are text on the page
    text = " ".join(parsed.text)
    assert NAME in text and ERROR in text
    assert NAME not in source and "<img" not in source
    tags = {tag for tag, _ in parsed.tags}
    assert not tags & {"script", "img", "link", "iframe", "object", "embed"}
    for tag, attrs in parsed.tags:
        assert not any(name.startswith("on") for name in attrs), (tag, attrs)
        for name in ("src", "href"):
            assert attrs.get(name) is None or attrs[name].startswith("#"), (tag, attrs)
    assert "http://" not in source.replace('xmlns="http://www.w3.org/2000/svg"', "") \
        and "https://" not in source


def test_literals_and_items_read_as_the_text_report_writes_them():
    lit = {"feature": "petal <width>", "states": ["(-inf,0.75]"]}
    assert literal_text(lit) == "petal <width> ∈ (-inf,0.75]"
    assert literal_text({"feature": "colour", "states": ["red", "blue"]}) == \
        "colour ∈ {red, blue}"
    assert item_text([lit, lit], "sufficient_reasons") == \
        "petal <width> ∈ (-inf,0.75] ∧ petal <width> ∈ (-inf,0.75]"
    assert item_text([lit, lit], "necessary_reasons").count(" ∨ ") == 1
    assert (item_text([], "sufficient_reasons"), item_text([], "necessary_reasons")) == \
        ("true", "false")
    assert item_text("setosa", "decision") == "setosa"


@pytest.mark.needs("chromium")
def test_the_page_renders_in_a_real_browser(run, tmp_path):
    page, doc = run
    report = doc["peers"][ADAPTER]
    dom = browser.dump_dom(page, tmp_path / "profile")
    rendered = Page(dom)
    text = " ".join(rendered.text)
    assert "verify-peer report" in text and "Summary" in text
    assert f"Broken promises ({sum(f['kind'] == 'broken' for f in report['findings'])})" in text
    assert "Differences of definition (not errors)" in text
    assert len(rendered.findings) == sum(len(r["findings"]) for r in doc["peers"].values())
    assert NAME in text and not any(tag == "script" for tag, _ in rendered.tags)
    assert any(tag == "svg" for tag, _ in rendered.tags)  # the outcome bar, drawn inline
    shot = browser.screenshot(page, tmp_path / "profile", tmp_path / "page.png")
    assert shot[:8] == b"\x89PNG\r\n\x1a\n" and len(shot) > 10_000


def test_html_output_is_checked_before_the_peers_run(tmp_path, capsys):
    missing = tmp_path / "no" / "report.html"
    assert main(["verify-peer", "--adapter", ADAPTER, "--dataset", "iris", "--trees", "3",
                 "--depth", "2", "--rows", "2", "-q", "--html", str(missing)]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "does not exist" in captured.err
