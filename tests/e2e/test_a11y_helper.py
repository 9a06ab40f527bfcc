"""The accessibility helper itself: it must find the usual mistakes, or its passes on the tool mean nothing."""

from __future__ import annotations

from tests.e2e.a11y import accessibility_problems

GOOD = """<!doctype html><html lang="en"><head><title>Good</title></head><body><main>
<h1>Good page</h1>
<form><label for="f">Your file</label><input type="file" id="f"><input type="hidden" name="csrf" value="x">
<select aria-label="Sort by"><option>name</option></select>
<span id="lbl">Comment</span><textarea aria-labelledby="lbl"></textarea>
<label>Wrapped <input type="text" name="wrapped"></label>
<button type="submit">Send</button></form>
<a href="#x">A link</a> <a>no href: not an action</a>
<img src="data:," alt="A chart of scores">
<figure><svg role="img" aria-label="Histogram of scores"><rect width="1" height="1"/></svg></figure>
<svg role="img"><title>Pass rates</title></svg>
<button hidden>hidden: not an action</button>
</main></body></html>"""

BAD = """<!doctype html><html><head></head><body><main>
<h1>One</h1><h1>Two</h1>
<input type="text" id="unlabelled"><label for="other">Not for it</label>
<img src="data:,">
<figure id="histogram"><svg><rect width="1" height="1"/></svg></figure>
<svg role="img" id="unnamed-chart"></svg>
<button tabindex="-1">Mouse only</button>
<button disabled>Greyed out</button>
<a href="#x" style="position: absolute; left: -9999px">Off screen</a>
<a href="#w" style="visibility: hidden">Invisible: not an action</a>
<a href="#y"></a>
<div style="display: none"><a href="#z">Not rendered</a></div>
</main></body></html>"""


def test_a_good_page_has_no_problems(page):
    page.set_content(GOOD)
    assert accessibility_problems(page) == []


def test_the_usual_mistakes_are_found(page):
    page.set_content(BAD)
    problems = "\n".join(accessibility_problems(page))
    for expected in [
        "<html> has no lang attribute",
        "the page has no <title>",
        "expected exactly one h1, found 2: One | Two",
        "form control without a label: <input#unlabelled>",
        'image without alt text: <img src="data:,">',
        "chart (svg in a figure) without role=img: <svg> in figure#histogram",
        "svg[role=img] without a text alternative (aria-label, aria-labelledby or <title>): <svg#unnamed-chart>",
        'action not keyboard-focusable (tabindex=-1): <button> "Mouse only"',
        'action disabled: <button> "Greyed out"',
        'action not visible when focused (empty or off-screen box): <a> "Off screen"',
        "action without an accessible name: <a>",
        "action not visible when focused (empty or off-screen box): <a>",  # the empty link has no box either
    ]:
        assert expected in problems, f"{expected!r} not in:\n{problems}"
    assert len(problems.splitlines()) == 12, problems  # and nothing else


def test_actions_are_reached_by_tab_inside_an_iframe(page):
    """The tool runs in the LMS's iframe: the Tab walk goes through the frame; a focus trap is reported."""
    inner = (
        '<html lang="en"><title>Tool</title><main><h1>Tool</h1><a href="#a">First</a>'
        '<button id="trap" onkeydown="if (event.key === `Tab`) event.preventDefault()">Trap</button>'
        "<button>Never reached</button></main></html>"
    )
    srcdoc = inner.replace('"', "&quot;")
    page.set_content(f'<a href="#top">LMS link</a><iframe title="tool" srcdoc="{srcdoc}"></iframe>')
    frame = page.frames[1]
    frame.wait_for_selector("h1")
    assert accessibility_problems(frame) == ['action not reached with the keyboard (Tab): <button> "Never reached"']
    assert accessibility_problems(frame, keyboard=False) == []
