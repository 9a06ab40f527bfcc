"""Accessibility basics, checked in the browser on any tool page (top-level or inside the LMS iframe).

`accessibility_problems(target)` lists what is wrong; `assert_accessible(target)` fails with that list.
`target` is a Playwright Page, or the Frame the tool runs in. The checks:

- the document has a language and a title, and exactly one h1;
- every visible form control (input except hidden, select, textarea) has a label: a <label for=id> (or an
  enclosing <label>) with text, aria-label, or aria-labelledby naming elements with text;
- every image and chart has a text alternative: img with non-empty alt (unless aria-hidden or
  role=presentation/none), svg[role=img] and canvas with aria-label/aria-labelledby (svg: or a <title>), and
  an svg inside a <figure> that is not aria-hidden must be role=img (a chart the screen reader would skip);
- every action in the main content (a[href], button, input type=button/submit/reset/image, summary) that is
  rendered is enabled, not tabindex=-1, has an accessible name, is on screen when focused, and is reached by
  pressing Tab from the top of the window (real keyboard events, through the LMS iframe when there is one).
  Actions not rendered at all (display: none, visibility: hidden, [hidden]) are not on the page: skipped.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from playwright.sync_api import Frame, Page

MARK = "data-a11y-action"

# Runs in the page: every problem but keyboard reachability, and marks the actions (data-a11y-action=<n>)
# so the Tab walk can tell which one has the focus. Returns {problems: [...], actions: [description, ...]}.
_STATIC_CHECKS = """
([scope, mark]) => {
  const problems = [];
  const describe = (el) => {
    const id = el.id ? "#" + el.id : "";
    const text = (el.getAttribute("aria-label") || el.textContent || el.value || "").trim().replace(/\\s+/g, " ");
    return `<${el.tagName.toLowerCase()}${id}>` + (text ? ` "${text.slice(0, 60)}"` : "");
  };
  const textOf = (el) => (el ? (el.textContent || "").trim() : "");
  const byIds = (ids) => (ids || "").split(/\\s+/).filter(Boolean).map((i) => document.getElementById(i));
  const labelledBy = (el) => {
    const ids = el.getAttribute("aria-labelledby");
    return ids !== null && byIds(ids).some((ref) => textOf(ref) || (ref && ref.getAttribute("aria-label")));
  };
  const ariaLabel = (el) => (el.getAttribute("aria-label") || "").trim() !== "";
  const visible = (el) => el.checkVisibility({ visibilityProperty: true, opacityProperty: false });
  const ariaHidden = (el) => el.closest("[aria-hidden=true]") !== null;

  if (!document.documentElement.lang) problems.push("<html> has no lang attribute");
  if (!document.title.trim()) problems.push("the page has no <title>");
  const h1s = document.querySelectorAll("h1");
  if (h1s.length !== 1) {
    problems.push(`expected exactly one h1, found ${h1s.length}: ` + [...h1s].map((h) => textOf(h)).join(" | "));
  }

  for (const el of document.querySelectorAll("input, select, textarea")) {
    if (el.type === "hidden" || !visible(el)) continue;
    const labelled = [...(el.labels || [])].some((l) => textOf(l)) || ariaLabel(el) || labelledBy(el);
    if (!labelled) problems.push(`form control without a label: ${describe(el)} (name=${el.name || "?"})`);
  }

  for (const img of document.querySelectorAll("img")) {
    const decorative = ariaHidden(img) || ["presentation", "none"].includes(img.getAttribute("role"));
    if (!decorative && !(img.getAttribute("alt") || "").trim()) {
      problems.push(`image without alt text: <img src="${img.getAttribute("src")}">`);
    }
  }
  for (const svg of document.querySelectorAll("svg")) {
    if (ariaHidden(svg) || svg.parentElement.closest("svg")) continue;
    const role = svg.getAttribute("role");
    const titled = [...svg.children].some((c) => c.tagName.toLowerCase() === "title" && textOf(c));
    if (role === "img" && !(ariaLabel(svg) || labelledBy(svg) || titled)) {
      const how = "aria-label, aria-labelledby or <title>";
      problems.push(`svg[role=img] without a text alternative (${how}): ${describe(svg)}`);
    } else if (role !== "img" && svg.closest("figure")) {
      problems.push(`chart (svg in a figure) without role=img: ${describe(svg)} in figure#${svg.closest("figure").id}`);
    }
  }
  for (const canvas of document.querySelectorAll("canvas")) {
    if (!ariaHidden(canvas) && !(ariaLabel(canvas) || labelledBy(canvas))) {
      problems.push(`canvas without aria-label/aria-labelledby: ${describe(canvas)}`);
    }
  }

  const root = document.querySelector(scope) || document.body;
  const actionSelector = "a[href], button, summary, "
    + "input[type=button], input[type=submit], input[type=reset], input[type=image]";
  const actions = [];
  for (const el of root.querySelectorAll(actionSelector)) {
    if (!visible(el)) continue;  // not rendered (display: none, visibility: hidden, [hidden]): not an action here
    const what = describe(el);
    const text = el.getAttribute("aria-label") || el.textContent || el.value || el.getAttribute("alt") || el.title;
    const imageNamed = [...el.querySelectorAll("img[alt]")].some((i) => i.alt.trim());
    const named = (text || "").trim() || labelledBy(el) || imageNamed;
    if (!named) problems.push(`action without an accessible name: ${what}`);
    if (el.disabled) { problems.push(`action disabled: ${what}`); continue; }
    if (el.tabIndex < 0) {
      problems.push(`action not keyboard-focusable (tabindex=${el.getAttribute("tabindex")}): ${what}`);
      continue;
    }
    el.focus();  // where a keyboard user would see it (a skip link may move on screen when focused)
    const box = el.getBoundingClientRect();
    if (box.width < 1 || box.height < 1 || box.right + scrollX <= 0 || box.bottom + scrollY <= 0) {
      problems.push(`action not visible when focused (empty or off-screen box): ${what}`);
    }
    el.setAttribute(mark, String(actions.length));
    actions.push(what);
  }
  return { problems, actions };
}
"""

_TAB_STOPS = (
    "() => document.querySelectorAll('a[href], button, input, select, textarea, summary, iframe, [tabindex]').length"
)
_FOCUSED_MARK = """
(mark) => (document.hasFocus() && document.activeElement ? document.activeElement.getAttribute(mark) : null)
"""


def accessibility_problems(target: Page | Frame, scope: str = "main", keyboard: bool = True) -> list[str]:
    """Everything the page (or the tool's frame) gets wrong of the basics above; [] when all is well.

    scope: the part of the page whose actions must be reachable by keyboard (the tool's <main>).
    keyboard=False checks focusability only (element.focus() then document.activeElement), no Tab walk.
    """
    result = target.evaluate(_STATIC_CHECKS, [scope, MARK])
    problems: list[str] = result["problems"]
    actions: list[str] = result["actions"]
    try:
        unreached = _tab_walk(target, len(actions)) if keyboard else _not_focusable(target, len(actions))
        problems += [f"action not reached with the keyboard (Tab): {actions[i]}" for i in sorted(unreached)]
    finally:
        target.evaluate(
            "(mark) => document.querySelectorAll(`[${mark}]`).forEach((e) => e.removeAttribute(mark))", MARK
        )
    return problems


def assert_accessible(target: Page | Frame, scope: str = "main", keyboard: bool = True) -> None:
    problems = accessibility_problems(target, scope, keyboard)
    assert not problems, f"accessibility problems on {target.url}:\n  " + "\n  ".join(problems)


def check_instructor_dashboard_accessibility(target: Page | Frame) -> None:
    """For the instructor dashboard test (not a test itself): the same basics on the dashboard.

    Expected there: one h1 ("Instructor dashboard"), the roster table #roster, the charts
    figure#score-histogram and figure#pass-rates as svg[role=img] with a text alternative, buttons reachable
    by keyboard. Waits for the roster and both charts, then fails with the list of problems. `target` is the
    tool's frame inside the LMS page (`tests.e2e.helpers.tool_frame(page)`) or a Page opened on the tool:

        page.goto(course_launch(lms, "instructor-turing", resource_link="decode-1"))
        frame = tool_frame(page)
        expect(frame.locator("h1")).to_have_text("Instructor dashboard")
        check_instructor_dashboard_accessibility(frame)
    """
    target.wait_for_selector("#roster")
    for chart in ("figure#score-histogram svg", "figure#pass-rates svg"):
        target.wait_for_selector(chart, state="attached")
    assert_accessible(target)


def _not_focusable(target: Page | Frame, count: int) -> set[int]:
    return set(
        target.evaluate(
            """([mark, count]) => [...Array(count).keys()].filter((i) => {
                 const el = document.querySelector(`[${mark}="${i}"]`);
                 el.focus();
                 return document.activeElement !== el;
               })""",
            [MARK, count],
        )
    )


def _tab_walk(target: Page | Frame, count: int) -> set[int]:
    """Press Tab from the top of the window until every marked action had the focus (or one full cycle)."""
    if count == 0:
        return set()
    page = target if _is_page(target) else target.page
    # As many presses as the window has tab stops (LMS page and tool frame together), and some to spare.
    stops = sum(frame.evaluate(_TAB_STOPS) for frame in page.frames)
    page.evaluate("() => document.activeElement && document.activeElement.blur()")
    page.bring_to_front()
    remaining, presses = set(range(count)), 0
    while remaining and presses < stops + 5:
        page.keyboard.press("Tab")
        presses += 1
        focused = target.evaluate(_FOCUSED_MARK, MARK)
        if focused is not None:
            remaining.discard(int(focused))
    return remaining


def _is_page(target: Page | Frame) -> bool:
    return hasattr(target, "main_frame")
