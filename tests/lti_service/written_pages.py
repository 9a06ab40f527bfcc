"""Written answers as course staff see them: the pages of Decode's written question, and the HTML an answer
renders to, read back to check that nothing in it is active."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import requests

from autograder.written import Answer
from testbed.lms import StudentPage

QUESTION = "two_rates"


def staff_get(staff: StudentPage, path: str = "") -> requests.Response:
    """A page of the staff's written answers (/staff/written + path), which must load."""
    response = staff.session.get(f"{staff.url}/staff/written{path}", timeout=30)
    assert response.status_code == 200, response.text[:1000]
    return response


def answer_refs(staff: StudentPage) -> dict[str, str]:
    """Who wrote which answer (not anonymous): name -> ref."""
    html = staff_get(staff, f"/{QUESTION}").text
    return {name: ref for ref, name in re.findall(r'data-ref="([0-9a-f]+)"><th scope="row"><a [^>]*>([^<]+)</a>', html)}


def rubric_keys(html: str) -> dict[str, str]:
    """Number key -> rubric item id, as the answer page offers them."""
    return {key: item for item, key in re.findall(r'name="item" value="(\d+)" id="apply-\d+" data-key="(\d)"', html)}


def form_value(html: str, name: str) -> str:
    return re.search(rf'name="{name}" value="([^"]*)"', html).group(1)


def grade(staff: StudentPage, ref: str, keys: list[str], comment: str = "", page: str | None = None, then="stay",
          adjustment: str = "0") -> requests.Response:  # fmt: skip
    """Grade an answer as a grader does: from its page (or the page they opened earlier), applying items by key."""
    html = page or staff_get(staff, f"/{QUESTION}/{ref}").text
    items = rubric_keys(html)
    form = {"csrf_token": staff.csrf, "revision": form_value(html, "revision"), "digest": form_value(html, "digest"),
            "item": [items[k] for k in keys], "adjustment": adjustment, "comment": comment, "then": then}  # fmt: skip
    return staff.session.post(f"{staff.url}/staff/written/{QUESTION}/{ref}", data=form, timeout=30)


ACTIVE = set(
    "script iframe object embed svg style form input button textarea select math link meta base frame frameset "
    "template video audio source applet".split()
)


class Elements(HTMLParser):
    """Every element of the HTML with its attributes, as a parser reads them back."""

    def __init__(self, markup: str) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[tuple[str, dict[str, str]]] = []
        self.feed(markup)
        self.close()

    def handle_starttag(self, tag, attrs):
        self.found.append((tag, {name: value or "" for name, value in attrs}))

    def of(self, tag: str) -> list[dict[str, str]]:
        return [attrs for name, attrs in self.found if name == tag]


def assert_inert(markup: str) -> Elements:
    """Nothing in the HTML can run, style the page, submit, embed, or load from elsewhere."""
    elements = Elements(markup)
    assert not [tag for tag, _ in elements.found if tag in ACTIVE]
    for _, attrs in elements.found:
        assert not [a for a in attrs if a.startswith("on") or a in ("style", "id", "name", "srcset", "formaction")]
        for url in (attrs.get("href"), attrs.get("src")):
            assert url is None or not url.strip().lower().startswith(("javascript:", "vbscript:", "data:text"))
    assert all(img["src"].startswith("data:image/") for img in elements.of("img"))
    for link in elements.of("a"):
        assert "href" not in link or link["href"].startswith(("http://", "https://", "mailto:")), link
        assert "href" not in link or link["rel"] == "noopener noreferrer nofollow"
    return elements


def written(*cells: dict) -> Answer:
    """An answer to question q1 made of these cells."""
    return Answer("q1", tuple(cells), "d" * 64, True)


def output_cell(*outputs: dict, source: str = "show()") -> dict:
    """A code cell with these outputs, as a notebook holds it."""
    return {"cell_type": "code", "source": source, "outputs": list(outputs)}
