"""A written answer's page costs bounded work, whatever the student wrote: rendering (in the tool) takes bounded
time and memory, however the markup is nested, and the page asks the grader's browser for bounded work (no SVG
image, whose drawing can cost any amount; no table spans or nesting without bound).

Time and memory are measured in a child process under an address-space limit, so a regression fails the test
(and is stopped) instead of taking the machine's memory."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import quote

import pytest

from lti_service.written.render import (
    MAX_ANSWER_NODES,
    MAX_DEPTH,
    MAX_INLINE,
    MAX_SPAN,
    SVG_IMAGE,
    TOO_MANY_PARTS,
    answer_html,
)
from testbed.submissions import notebook_bytes
from tests.lti_service.written_pages import QUESTION, Elements, answer_refs, assert_inert, output_cell, written
from tests.written_corpus.notebooks import b64, image_output, md, png

ROOT = Path(__file__).resolve().parents[2]
SECONDS, MEGABYTES = 2.0, 200
"""a hostile answer's budget (a plain one renders in milliseconds); the red team's took 59 s and 1.2-2.5 GB"""


def close_then_open(count: int) -> str:
    """Bold and italic, each with its own title, left open as every paragraph is closed and another opened: the
    HTML5 parser re-opens all of them in each new paragraph (the red team's answer)."""
    return "".join(f"<b title={n}><i title={n}>x</p><p>" for n in range(count))


def paragraphs_in_paragraphs(count: int) -> str:
    """The same with paragraphs opened inside paragraphs (a raw HTML block for markdown)."""
    return "".join(f"<p><b title={n}><i title={n}>x" for n in range(count))


def markdown_formatting(count: int) -> str:
    """Markdown's bold, italic and strikethrough, left unclosed, around the same."""
    return "".join(f"**_~~x <b title={n}>y</p><p>" for n in range(count))


def html_output(markup: str) -> dict:
    return output_cell({"output_type": "display_data", "data": {"text/html": markup}})


HOSTILE = {
    "closed and reopened paragraphs, in markdown": md(close_then_open(1_900)),
    "paragraphs in paragraphs, in markdown": md(paragraphs_in_paragraphs(2_000)),
    "markdown's **_~~ around them": md(markdown_formatting(2_200)),
    "closed and reopened paragraphs, as an HTML output": html_output(close_then_open(1_900)),
    "10,000 nested blocks": html_output("<div><blockquote><ul><li>" * 10_000),
    "unclosed tags and comments": html_output('<a "<a<!--x><?' * 15_000),
}

_CHILD = f"""
import json, resource, sys, time
from autograder.written import Answer
from lti_service.written.render import answer_html
cells = tuple(json.load(sys.stdin))
vm = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmSize:")) * 1024
resource.setrlimit(resource.RLIMIT_AS, (vm + {4 * MEGABYTES} * 2**20,) * 2)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
start = time.perf_counter()
page = answer_html(Answer("q1", cells, "d" * 64, True))
seconds = time.perf_counter() - start
grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
print(json.dumps({{"seconds": seconds, "megabytes": grown, "page": page}}))
"""


def render_in_child(*cells: dict) -> dict:
    """answer_html's page, seconds and growth of memory (MB), in a process that may not grow past 4× the budget
    and is stopped after 10× the time."""
    try:
        done = subprocess.run([sys.executable, "-c", _CHILD], input=json.dumps(cells), capture_output=True, text=True,
                              cwd=ROOT, timeout=10 * SECONDS)  # fmt: skip
    except subprocess.TimeoutExpired:
        pytest.fail(f"rendering took over {10 * SECONDS} s")
    assert done.returncode == 0, f"rendering failed (out of memory?): {done.stderr[-2000:]}"
    return json.loads(done.stdout)


@pytest.mark.parametrize("cell", HOSTILE.values(), ids=HOSTILE.keys())
def test_a_hostile_answer_renders_within_a_time_and_memory_budget(cell):
    assert 40_000 < len(json.dumps(cell)) < 300_000  # the size of the red team's answers (43-62 KB) and more
    shown = render_in_child(cell)
    assert shown["seconds"] < SECONDS and shown["megabytes"] < MEGABYTES, shown | {"page": "..."}
    elements = assert_inert(shown["page"])
    assert len(elements.found) < MAX_ANSWER_NODES and len(shown["page"]) < 1_000_000


def depths(markup: str) -> tuple[int, int]:
    """(how deep elements nest, how many inline ones are open at most) in the HTML, as a parser reads it back."""

    class Depths(Elements):
        def __init__(self) -> None:
            self.open: list[str] = []
            self.deepest = self.inline = 0
            super().__init__(markup)

        def handle_starttag(self, tag, attrs):
            if tag not in ("br", "img", "hr", "wbr", "col"):
                self.open.append(tag)
                self.deepest = max(self.deepest, len(self.open))
                self.inline = max(self.inline, sum(t in ("b", "i", "em", "strong", "span", "a") for t in self.open))

        def handle_endtag(self, tag):
            if tag in self.open:
                del self.open[len(self.open) - 1 - self.open[::-1].index(tag) :]

    found = Depths()
    return found.deepest, found.inline


def test_formatting_left_open_is_closed_at_each_paragraph_and_shown():
    page = answer_html(written(md(close_then_open(3) + "\n\n**bold** and <em>em</em>")))
    assert_inert(page)
    assert "<p><b><i>x</i></b></p><p><b><i>x</i></b></p><p><b><i>x</i></b></p>" in page
    assert "<strong>bold</strong> and <em>em</em>" in page


def test_nesting_is_bounded_in_depth_and_in_open_inline_elements():
    deep = answer_html(written(html_output("<div>" * 500 + "deep text" + "<b><i><span>" * 100 + "inside")))
    deepest, inline = depths(deep)
    assert deepest <= MAX_DEPTH + 2 and inline <= MAX_INLINE  # + the cell's and the output's own div
    assert "deep text" in deep and "inside" in deep
    lists = answer_html(written(md("".join(" " * 2 * n + "- item\n" for n in range(60)))))
    assert depths(lists)[0] <= MAX_DEPTH + 1


def test_an_answer_with_too_many_elements_is_cut_with_a_note():
    many = "<b>x</b>" * 25_000  # 200 KB, one output's most
    page = answer_html(written(output_cell(*[{"output_type": "display_data", "data": {"text/html": many}}] * 12),
                               md("A last paragraph.")))  # fmt: skip
    elements = assert_inert(page)
    assert MAX_ANSWER_NODES // 4 < len(elements.of("b")) <= MAX_ANSWER_NODES
    assert TOO_MANY_PARTS.replace("'", "&#x27;") in page and "11 more outputs not shown" in page
    assert "1 more cells not shown: the answer has too many parts to show here" in page
    assert "A last paragraph." not in page and len(page) < 1_000_000


def test_table_spans_are_bounded():
    page = answer_html(written(md('<table><tr><td colspan="99999" rowspan="65534">a</td><th colspan="x">b</th>'
                                  '<td rowspan="3">c</td></tr></table>')))  # fmt: skip
    cells = [attrs for tag, attrs in assert_inert(page).found if tag in ("td", "th")]
    assert cells == [{"colspan": str(MAX_SPAN), "rowspan": str(MAX_SPAN)}, {}, {"rowspan": "3"}]


def test_hand_written_html_with_optional_end_tags_keeps_its_structure():
    page = answer_html(written(html_output("<table><tr><td>a<td>b<tr><td>c</table><ul><li>one<li>two</ul>")))
    assert "<tr><td>a</td><td>b</td></tr><tr><td>c</td></tr>" in page and "<li>one</li><li>two</li>" in page


SVG = ('<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" width="{w}" '
       'height="{w}">{}</svg>')  # fmt: skip
NESTED_USE = "<defs><g id='a0'><circle r='1'/></g>" + "".join(
    f"<g id='a{n}'>" + f"<use href='#a{n - 1}'/>" * 10 + "</g>" for n in range(1, 9)
) + "</defs><use xlink:href='#a8'/>"  # fmt: skip
SVGS = {
    "nested use": SVG.format(NESTED_USE, w=100),
    "a filter": SVG.format(
        "<filter id='f'><feGaussianBlur stdDeviation='900'/></filter>"
        "<rect width='99999' height='99999' filter='url(#f)'/>",
        w=100,
    ),  # fmt: skip
    "nested patterns": SVG.format(
        "".join(
            f"<pattern id='p{n}' width='1' height='1' patternUnits='userSpaceOnUse'>"
            f"<rect width='1' height='1' fill='url(#p{n + 1})'/></pattern>"
            for n in range(30)
        )
        + "<rect width='100' height='100' fill='url(#p0)'/>",
        w=100,
    ),  # fmt: skip
    "a huge size": SVG.format("<rect width='1' height='1'/>", w=10**9),
    "entities": '<!DOCTYPE svg [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]>'
    + SVG.format("<text>&b;&b;&b;&b;&b;</text>", w=100),
    "a plain circle": SVG.format("<circle cx='5' cy='5' r='4' fill='red'/>", w=10),
}


def svg_everywhere(svg: str) -> list[dict]:
    """The SVG in every place an answer can hold an image."""
    encoded = base64.b64encode(svg.encode()).decode()
    attached = md("My drawing: ![drawing](attachment:drawing.svg)")
    attached["attachments"] = {"drawing.svg": {"image/svg+xml": encoded}}
    return [
        output_cell({"output_type": "display_data", "data": {"image/svg+xml": svg, "text/plain": "<Figure>"}}),
        md(f'<img src="data:image/svg+xml;base64,{encoded}" alt="drawing">'),
        md(f"![drawing](data:image/svg+xml;base64,{encoded})"),
        attached,
        html_output(
            f'<p><img src="data:image/svg+xml;utf8,{quote(svg)}"></p><img src="DATA:IMAGE/SVG+XML;base64,{encoded}">'
        ),  # fmt: skip
    ]


@pytest.mark.parametrize("svg", SVGS.values(), ids=SVGS.keys())
def test_an_svg_image_is_never_shown_anywhere_only_a_note(svg):
    page = answer_html(written(*svg_everywhere(svg)))
    assert assert_inert(page).of("img") == [] and "<svg" not in page
    assert page.count(SVG_IMAGE) == 5  # markdown's ![...](data:...) is refused by markdown itself: its text is shown


def test_an_output_with_an_svg_and_a_png_shows_the_png():
    image = png(4, 3)
    both = image_output(image) | {}
    both["data"] = {"image/svg+xml": SVGS["nested use"], **both["data"]}
    [img] = assert_inert(answer_html(written(output_cell(both)))).of("img")
    assert img["src"] == f"data:image/png;base64,{b64(image)}"


def peak_megabytes(pid: int) -> float:
    """A process's peak resident memory so far (Linux)."""
    status = Path(f"/proc/{pid}/status").read_text()
    return next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM:")) / 1024


def test_a_graders_page_for_a_hostile_answer_comes_within_the_budget(lms):
    """Over HTTP, the real tool: the grader's page for the red team's answer, and the web process's memory."""
    link = "written-hostile-work"
    ada = lms.open("student-ada", link)
    ada.upload(notebook_bytes(written=close_then_open(1_900)))
    ada.wait_graded(1)
    staff = lms.open("instructor-turing", link)
    ref = answer_refs(staff)["Ada Lovelace"]
    web = lms.tool.processes[0].pid
    before, start = peak_megabytes(web), time.perf_counter()
    response = staff.session.get(f"{staff.url}/staff/written/{QUESTION}/{ref}", timeout=10 * SECONDS)
    seconds = time.perf_counter() - start
    assert response.status_code == 200 and seconds < 2 * SECONDS  # the page's other work besides
    assert peak_megabytes(web) - before < MEGABYTES
    answer = response.text.split('id="answer">', 1)[1].split("</section>", 1)[0]
    assert "<p><b><i>x</i></b></p><p><b><i>x</i></b></p>" in answer and len(response.text) < 1_000_000
