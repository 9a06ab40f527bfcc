"""A student's written answer (and a question's prompt) as HTML for course staff, in which nothing a student
wrote is active: no script, no style, no form, no frame, no request to another site.

Markdown is rendered with raw HTML allowed (as Jupyter does), then everything goes through three passes. The
first (`_bounded`, linear in its input) reads the markup and writes it again well nested: only allowed elements,
inline elements closed at every block and at most MAX_INLINE of them open, at most MAX_DEPTH elements deep,
at most MAX_ANSWER_NODES tags and runs of text per answer (the rest left out with a note). Without it the
sanitiser's HTML5 parser re-opens every inline element left open at each new block, and its work, not only its
output, grows with the square of the answer (a 60 KB answer took a minute and gigabytes). Then nh3 (an HTML5
sanitiser) keeps known-inert elements and attributes, and a last pass re-writes its output element by element,
keeps only links to http, https and mailto and images that are checked data: URIs of raster formats (a remote
image would tell a third party who graded when; an SVG can cost the grader's browser any amount of work, so it
is a note), and escapes every text and attribute. The pages' Content-Security-Policy forbids scripts too, but
this stands without it. Every size is bounded: a student's answer can be a 60 MB notebook.
"""

from __future__ import annotations

import base64
import binascii
import html
import re
import struct
from dataclasses import dataclass
from html.parser import HTMLParser
from typing import Any

import nh3
from markdown_it import MarkdownIt

from autograder.written import MAX_REGION_CELLS, PLACEHOLDER, Answer, WrittenError, WrittenQuestion, answers

MAX_CELL_TEXT = 200 * 1024
"""characters of one cell's text (its markdown, code or one output) shown; the rest is left out with a note"""
MAX_IMAGE_BYTES = 4 * 1024 * 1024
"""bytes of one image shown inline (a screenshot of a page is about 1 MB)"""
MAX_IMAGE_PIXELS = 40_000_000
"""pixels of one image shown inline, read from its header: a small file can decode to gigabytes"""
MAX_ANSWER_IMAGES = 8 * 1024 * 1024
"""bytes of images shown inline in one answer"""
MAX_ANSWER_TEXT = 2 * 1024 * 1024
"""characters of HTML (images apart) of one answer; the cells past it are left out with a note"""
MAX_ANSWER_MARKDOWN = 256 * 1024
"""characters of one answer rendered as markdown; past it, markdown is shown as plain text. markdown-it-py
takes up to ~17 µs a character on hostile text ("[[[[...": 3.4 s for 200 KB), so this bounds a page's time"""
MAX_ANSWER_NODES = 50_000
"""tags and runs of text of one answer's HTML read (after markdown, before the sanitiser, comments and left-out
elements included): this bounds the work of every pass; past it the rest of the answer is left out with a note"""
MAX_INLINE = 16
"""inline elements (bold, italic, link...) open at once; the ones inside are left out (their text kept)"""
MAX_DEPTH = 32
"""elements open at once; the ones inside are left out (their text kept). A parser's work per tag grows with it"""
MAX_SPAN = 100
"""columns or rows one table cell spans: a browser lays a table out in its cells' spans"""

MISSING_MARKER = (
    "The student deleted this question's marker cell, so its answer could not be told apart. Shown below: the "
    "notebook's cells between the written answers before and after it, where the answer should be."
)
MISSING_CELLS = "The student's notebook has no answer to this question (its cells were removed)."
REMOTE_IMAGE = "[an image from the web, not loaded]"
INTERACTIVE = "(an interactive output, not shown)"
DOWNLOAD = "download the notebook to see all of it"
SVG_IMAGE = "An SVG image, not shown: download the notebook to see it."
TOO_MANY_PARTS = f"The rest is not shown: the answer has too many parts to show here; {DOWNLOAD}."

TAGS = {
    "a", "abbr", "b", "blockquote", "br", "caption", "cite", "code", "col", "colgroup", "dd", "del", "details",
    "dfn", "div", "dl", "dt", "em", "figcaption", "figure", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "i", "img",
    "ins", "kbd", "li", "mark", "ol", "p", "pre", "q", "s", "samp", "small", "span", "strike", "strong", "sub",
    "summary", "sup", "table", "tbody", "td", "tfoot", "th", "thead", "tr", "tt", "u", "ul", "var", "wbr",
}  # fmt: skip
"""elements kept: text, lists, tables, code and images; nothing that runs, styles, submits or embeds"""
ATTRIBUTES = {
    "a": {"href", "title"},
    "img": {"src", "alt", "title", "width", "height"},
    "td": {"colspan", "rowspan", "align"},
    "th": {"colspan", "rowspan", "align", "scope"},
    "ol": {"start"},
    "abbr": {"title"},
}
"""attributes kept, per element: no id or name (they could clobber the page's), no class, no style, no on*"""
DROPPED_WITH_CONTENT = {"script", "style", "svg", "math", "template", "iframe", "object", "embed", "noscript",
                        "textarea", "select", "title"}  # fmt: skip
"""elements left out with everything inside them (other unknown elements are left out, their text kept)"""
INLINE = {"a", "abbr", "b", "br", "cite", "code", "del", "dfn", "em", "i", "img", "ins", "kbd", "mark", "q", "s",
          "samp", "small", "span", "strike", "strong", "sub", "sup", "tt", "u", "var", "wbr"}  # fmt: skip
"""elements of TAGS kept inside a line of text; the others are blocks, which close every inline element open"""
VOID = {"br", "col", "hr", "img", "wbr"}
RAW_TEXT = {"script", "style", "textarea", "title", "xmp", "iframe", "noembed", "noframes", "noscript", "plaintext"}
"""elements whose content HTML reads as text up to their end tag, not as markup"""
_ENDED_BY_BLOCKS = INLINE | {"p"}
TABLE_PARENTS = {"caption": {"table"}, "colgroup": {"table"}, "col": {"table", "colgroup"}, "thead": {"table"},
                 "tbody": {"table"}, "tfoot": {"table"}, "tr": {"table", "thead", "tbody", "tfoot"},
                 "td": {"tr"}, "th": {"tr"}}  # fmt: skip
"""the parts of a table, each kept only right inside its parent"""
_SECTIONS = ("thead", "tbody", "tfoot", "caption", "colgroup")
IMPLIED_ENDS = {"li": ({"li"}, {"ul", "ol"}), "dt": ({"dt", "dd"}, {"dl"}), "dd": ({"dt", "dd"}, {"dl"}),
                "tr": ({"tr"}, {"table"}), "td": ({"td", "th"}, {"tr"}), "th": ({"td", "th"}, {"tr"}),
                **dict.fromkeys(_SECTIONS, (set(TABLE_PARENTS), {"table"}))}  # fmt: skip
"""a start tag that ends an open element of the first kind (HTML's optional end tags: `<li>a<li>b`), unless an
element of the second kind is nearer"""
LINK_SCHEMES = ("http://", "https://", "mailto:")
IMAGE_TYPES = {"image/png": "PNG", "image/jpeg": "JPEG", "image/gif": "GIF", "image/webp": "WebP"}
_DATA_URI = re.compile(r"data:(image/(?:png|jpeg|gif|webp));base64,([A-Za-z0-9+/=\s]*)\Z", re.IGNORECASE)
_TOKEN = re.compile(
    r"(?P<text>[^<]++)"
    r"|<(?P<end>/?)(?P<name>[A-Za-z][^\t\n\f\r />]*+)(?P<attrs>(?:[^>\"']++|\"[^\"]*+\"|'[^']*+')*+)>"
    r"|<!---?>|<!--(?:.*?-->|.*+)|<[!?][^>]*+>|</(?:[^A-Za-z>][^>]*+)?>"  # comments and declarations
    r"|<[A-Za-z/!?].*+"  # a tag or comment never closed: the rest is inside it, as HTML reads it
    r"|(?P<lt><)",
    re.DOTALL,
)
"""one token of HTML; possessive and each alternative tried once per token, so linear in the markup"""
_ATTRIBUTE = re.compile(r"""([^\s"'=/]++)(?:\s*+=\s*+("[^"]*+"|'[^']*+'|[^\s"']++))?|"[^"]*+"|'[^']*+'""")
_RAW_END = {name: re.compile(rf"</{name}[\t\n\f\r />]|\Z", re.IGNORECASE) for name in RAW_TEXT - {"plaintext"}}
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-_]")
_MARKDOWN = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])


@dataclass
class _Budget:
    """What is left to show of one answer."""

    text: int = MAX_ANSWER_TEXT
    images: int = MAX_ANSWER_IMAGES
    markdown: int = MAX_ANSWER_MARKDOWN
    nodes: int = MAX_ANSWER_NODES
    uri_chars: int = 0
    """characters of the images inlined so far (they count against `images`, not `text`)"""


def answer_html(answer: Answer) -> str:
    """The answer as HTML safe to insert in a page (`|safe`). An answer whose question marker the student
    deleted is shown as the cells where it should be, under a note that says so."""
    parts = []
    if not answer.found:
        parts.append(_note(MISSING_MARKER if answer.cells else MISSING_CELLS))
    elif answer.blank:
        return _note("Nothing written: the answer cells are empty or as handed out.")
    budget = _Budget()
    for number, cell in enumerate(answer.cells):
        if budget.nodes <= 0:
            parts.append(_note(f"{len(answer.cells) - number} more cells not shown: the answer has too many parts to "
                               f"show here; {DOWNLOAD}."))  # fmt: skip
            break
        images_before = budget.uri_chars
        part = _cell_html(cell, budget)
        text = len(part) - (budget.uri_chars - images_before)
        if text > budget.text:
            parts.append(_note(f"{len(answer.cells) - number} more cells not shown: the answer is too long to show "
                               f"here; {DOWNLOAD}."))  # fmt: skip
            break
        budget.text -= text
        parts.append(part)
    if answer.omitted_cells:
        parts.append(_note(f"{answer.omitted_cells} more cells not shown (an answer shows at most "
                           f"{MAX_REGION_CELLS}); {DOWNLOAD}."))  # fmt: skip
    return "\n".join(parts)


def notebook_answer_html(notebook: bytes, question: str, questions: list[WrittenQuestion]) -> str:
    """A submitted notebook's answer to one written question, as answer_html shows it, or a note saying why it
    cannot be shown. The notebook is read with every written question of the assignment, as its digest was
    (a question is matched by its prompt, else by its position among them)."""
    try:
        found = answers(notebook, questions)[question]
    except WrittenError as error:
        return f"<p class='note'>This answer cannot be shown: {html.escape(str(error))}. Download the notebook.</p>"
    return answer_html(found)


def prompt_html(markdown: str) -> str:
    """A question's prompt (markdown) as HTML safe to insert in a page (`|safe`)."""
    return _markdown(_cut(markdown, 0), {}, _Budget())


# --- cells -------------------------------------------------------------------------------------------------


def _cell_html(cell: dict[str, Any], budget: _Budget) -> str:
    kind, source = cell.get("cell_type"), str(cell.get("source", ""))
    omitted = cell.get("omitted") or {}
    if kind == "markdown":
        if source.strip() == PLACEHOLDER:
            return ""
        attachments = cell.get("attachments") if isinstance(cell.get("attachments"), dict) else {}
        body = _markdown(_cut(source, omitted.get("source", 0)), attachments, budget)
        return f'<div class="answer-cell answer-markdown">{body}</div>'
    if kind == "code":
        code = _pre(_cut(source, omitted.get("source", 0)), "code")
        shown = _outputs_html(cell.get("outputs") or [], omitted.get("outputs", 0), budget.text - len(code), budget)
        return f'<div class="answer-cell answer-code">{code}{shown}</div>'
    return f'<div class="answer-cell answer-raw">{_pre(_cut(source, omitted.get("source", 0)))}</div>'


def _outputs_html(outputs: list[Any], omitted: int, room: int, budget: _Budget) -> str:
    """A code cell's outputs, as many as fit in `room` characters (images apart)."""
    parts = []
    for number, output in enumerate(outputs):
        images_before = budget.uri_chars
        part = _output_html(output, budget) if isinstance(output, dict) else ""
        room -= len(part) - (budget.uri_chars - images_before)
        if room < 0:
            omitted += len(outputs) - number
            break
        parts.append(part)
        if budget.nodes <= 0:
            omitted += len(outputs) - number - 1
            break
    if omitted:
        parts.append(_note(f"{omitted} more outputs not shown; {DOWNLOAD}."))
    return "".join(f'<div class="answer-output">{part}</div>' for part in parts if part)


def _output_html(output: dict[str, Any], budget: _Budget) -> str:
    kind, omitted = output.get("output_type"), output.get("omitted") or {}
    if kind == "stream":
        return _pre(_cut(_plain(output.get("text")), omitted.get("text", 0)))
    if kind == "error":
        text = _plain(output.get("traceback")) or f"{output.get('ename', '')}: {output.get('evalue', '')}"
        return _pre(_cut(text, omitted.get("traceback", 0)))
    data = output.get("data")
    if not isinstance(data, dict):
        return ""
    return _bundle_html(data, omitted, budget)


def _bundle_html(data: dict[str, Any], omitted: dict[str, int], budget: _Budget) -> str:
    """The representation Jupyter would show, made inert."""
    if any(m in data for m in ("application/vnd.jupyter.widget-view+json", "application/javascript")):
        return _note(INTERACTIVE)
    if "text/html" in data:
        return _clean(_cut(str(data["text/html"]), omitted.get("text/html", 0)), {}, budget)
    for mime in IMAGE_TYPES:
        if mime in data:
            return _image_output(mime, str(data[mime]), omitted.get(mime, 0), budget)
    if "image/svg+xml" in data:
        return _note(SVG_IMAGE)
    if "text/markdown" in data:
        return _markdown(_cut(str(data["text/markdown"]), omitted.get("text/markdown", 0)), {}, budget)
    for mime in ("text/latex", "text/plain"):
        if mime in data:
            return _pre(_cut(_plain(data[mime]), omitted.get(mime, 0)))
    return _note("(an output of a kind not shown here)") if data else ""


def _image_output(mime: str, data: str, omitted: int, budget: _Budget) -> str:
    if omitted:
        return _note(f"An image of {_size(omitted * 3 // 4)} not shown (over {_size(MAX_IMAGE_BYTES)}); {DOWNLOAD}.")
    uri, refusal = _data_image(f"data:{mime};base64,{data}", budget)
    if uri is None:
        return _note(refusal)
    alt = f"an output image ({IMAGE_TYPES[mime]})"
    return f'<img src="{uri}" alt="{alt}">'


def _plain(text: Any) -> str:
    """Output text without ANSI colour codes (tracebacks are full of them)."""
    return _ANSI.sub("", text if isinstance(text, str) else "")


def _pre(text: str, inner: str | None = None) -> str:
    body = html.escape(text, quote=False)
    return f"<pre><{inner}>{body}</{inner}></pre>" if inner else f"<pre>{body}</pre>"


def _note(text: str) -> str:
    return f'<p class="answer-note">{html.escape(text)}</p>'


def _cut(text: str, already: int) -> str:
    """At most MAX_CELL_TEXT characters, with a note of how much more there is (`already` was cut before)."""
    more = max(len(text) - MAX_CELL_TEXT, 0) + already
    if not more:
        return text
    return f"{text[:MAX_CELL_TEXT]}\n\n... {_size(more)} more not shown; {DOWNLOAD}."


def _size(count: int) -> str:
    for unit, scale in (("MB", 1 << 20), ("KB", 1 << 10)):
        if count >= scale:
            return f"{count / scale:.1f} {unit}"
    return f"{count} bytes"


# --- markdown and HTML -------------------------------------------------------------------------------------


def _markdown(text: str, attachments: dict[str, Any], budget: _Budget) -> str:
    if len(text) > budget.markdown:
        return _pre(text)
    budget.markdown -= len(text)
    try:
        rendered = _MARKDOWN.render(text)
    except RecursionError:  # markdown-it bounds nesting; this is the belt to those braces
        return _pre(text)
    return _clean(rendered, attachments, budget)


def _clean(markup: str, attachments: dict[str, Any], budget: _Budget) -> str:
    bounded, complete = _bounded(markup, budget)
    sanitised = nh3.clean(
        bounded,
        tags=TAGS,
        clean_content_tags=DROPPED_WITH_CONTENT,
        attributes=ATTRIBUTES,
        url_schemes={"http", "https", "mailto", "data", "attachment"},
        link_rel="noopener noreferrer nofollow",
        strip_comments=True,
    )
    writer = _Rewriter(attachments, budget)
    writer.feed(sanitised)
    writer.close()
    return "".join(writer.out) + ("" if complete else _note(TOO_MANY_PARTS))


def _bounded(markup: str, budget: _Budget) -> tuple[str, bool]:
    """(the markup written again by _Tree, whether all of it fit in the answer's budget of nodes). Linear: one
    regular-expression match per token, each a constant amount of work besides what it consumes."""
    tree, at = _Tree(), 0
    while at < len(markup):
        if budget.nodes <= 0:
            return tree.close(), False
        budget.nodes -= 1
        token = _TOKEN.match(markup, at)
        at = token.end()
        if token["text"] is not None:
            tree.text(token["text"])
        elif token["lt"]:
            tree.text("&lt;")
        elif token["end"]:
            tree.end(token["name"].lower())
        elif token["name"] and token["name"].lower() in RAW_TEXT:
            at = _raw_text(markup, at, token["name"].lower(), tree)
        elif token["name"]:
            tree.start(token["name"].lower(), token["attrs"])
    return tree.close(), True


def _raw_text(markup: str, at: int, name: str, tree: _Tree) -> int:
    """Past a raw-text element (`<script>...</script>`): its content is text, kept unless the element is left
    out with its content. Returns where its end tag ends."""
    end = _RAW_END[name].search(markup, at).start() if name in _RAW_END else len(markup)
    if name not in DROPPED_WITH_CONTENT:
        tree.text(html.escape(markup[at:end], quote=False))
    close = markup.find(">", end)
    return len(markup) if close < 0 else close + 1


class _Tree:
    """The first pass's output: allowed elements only, well nested, shallow, and no inline element open across
    a block, so the HTML5 parser behind it never re-opens one (its "active formatting elements")."""

    def __init__(self) -> None:
        self.out: list[str] = []
        self.open: list[str] = []
        self.inline = 0
        self.skipping: str | None = None
        self.skipped = 0
        """how many elements named `skipping` (left out with their content) are open"""

    def text(self, text: str) -> None:
        if self.skipping is None:
            self.out.append(text)

    def start(self, name: str, attrs: str) -> None:
        if self.skipping is not None:
            self.skipped += name == self.skipping
        elif name in DROPPED_WITH_CONTENT:
            if name != "embed" and not attrs.rstrip().endswith("/"):  # embed is void: nothing inside
                self.skipping, self.skipped = name, 1
        elif name in TAGS and self._fits(name):
            self.out.append(f"<{name}{_kept_attributes(name, attrs)}>")
            if name not in VOID:
                self.open.append(name)
                self.inline += name in INLINE

    def end(self, name: str) -> None:
        if self.skipping is not None:
            self.skipped -= name == self.skipping
            self.skipping = self.skipping if self.skipped else None
        elif name in self.open:
            self._close_to(name)

    def close(self) -> str:
        while self.open:
            self._pop()
        return "".join(self.out)

    def _fits(self, name: str) -> bool:
        """Whether the element may open here, after closing what HTML would close before it."""
        if name in INLINE:
            if name == "a" and "a" in self.open:
                self._close_to("a")
            return self.inline < MAX_INLINE and len(self.open) < MAX_DEPTH
        while self.open and self.open[-1] in _ENDED_BY_BLOCKS:
            self._pop()
        if name in IMPLIED_ENDS:
            ends, boundaries = IMPLIED_ENDS[name]
            nearest = next((o for o in reversed(self.open) if o in ends or o in boundaries), None)
            if nearest is not None and nearest in ends:
                self._close_to(nearest)
        parent = self.open[-1] if self.open else None
        return len(self.open) < MAX_DEPTH and (name not in TABLE_PARENTS or parent in TABLE_PARENTS[name])

    def _close_to(self, name: str) -> None:
        while self._pop() != name:
            pass

    def _pop(self) -> str:
        name = self.open.pop()
        self.inline -= name in INLINE
        self.out.append(f"</{name}>")
        return name


def _kept_attributes(name: str, attrs: str) -> str:
    """The attributes of ATTRIBUTES[name] (the first of each name, as HTML reads them), written again."""
    allowed, kept = ATTRIBUTES.get(name, ()), {}
    for match in _ATTRIBUTE.finditer(attrs) if allowed else ():
        key, value = (match[1] or "").lower(), match[2] or ""
        if key in allowed and key not in kept:
            kept[key] = html.unescape(value[1:-1] if value[:1] in ('"', "'") else value)
    return "".join(f' {key}="{html.escape(value)}"' for key, value in kept.items())


class _Rewriter(HTMLParser):
    """The second pass: writes the sanitiser's output again, element by element, with only allowed elements
    and attributes, links only to LINK_SCHEMES, images only from checked data: URIs, and everything escaped."""

    def __init__(self, attachments: dict[str, Any], budget: _Budget) -> None:
        super().__init__(convert_charrefs=True)
        self.attachments, self.budget, self.out = attachments, budget, []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "img":
            self.out.append(self._image(dict(attrs)))
        elif tag in TAGS:
            self.out.append(f"<{tag}{self._attributes(tag, attrs)}>")

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)

    def handle_endtag(self, tag: str) -> None:
        if tag in TAGS and tag not in ("img", "br", "hr", "wbr", "col"):
            self.out.append(f"</{tag}>")

    def handle_data(self, data: str) -> None:
        self.out.append(html.escape(data, quote=False))

    def _attributes(self, tag: str, attrs: list[tuple[str, str | None]]) -> str:
        kept = []
        for name, value in attrs:
            if name not in ATTRIBUTES.get(tag, ()) or value is None:
                continue
            if name == "href" and not value.strip().lower().startswith(LINK_SCHEMES):
                continue
            if name in ("colspan", "rowspan") and not (value := _span(value)):
                continue
            kept.append(f' {name}="{html.escape(value)}"')
        if tag == "a" and any(k.startswith(" href=") for k in kept):
            kept.append(' rel="noopener noreferrer nofollow"')
        return "".join(kept)

    def _image(self, attrs: dict[str, str | None]) -> str:
        src = (attrs.get("src") or "").strip()
        if src.lower().startswith("attachment:"):
            src = _attachment(self.attachments, src[len("attachment:") :])
        if not src.lower().startswith("data:"):
            remote = src.lower().startswith(("http:", "https:", "//"))
            return html.escape(REMOTE_IMAGE if remote else "[an image, not shown]")
        uri, refusal = _data_image(src, self.budget)
        if uri is None:
            return html.escape(f"[{refusal}]")
        alt = html.escape(attrs.get("alt") or "an image")
        return f'<img src="{uri}" alt="{alt}">'


def _span(value: str) -> str:
    """A table cell's colspan or rowspan, at most MAX_SPAN; "" if it is not a number."""
    return str(min(int(value), MAX_SPAN)) if re.fullmatch(r"\s*[0-9]{1,6}\s*", value) else ""


def _attachment(attachments: dict[str, Any], name: str) -> str:
    """A markdown cell's attached image (pasted into the cell) as a data: URI; "" if it has none by that name."""
    bundle = attachments.get(name)
    if not isinstance(bundle, dict):
        return ""
    for mime in (*IMAGE_TYPES, "image/svg+xml"):
        if isinstance(bundle.get(mime), str) and bundle[mime]:
            return f"data:{mime};base64,{bundle[mime]}"
    return ""


# --- images ------------------------------------------------------------------------------------------------


def _data_image(uri: str, budget: _Budget) -> tuple[str | None, str]:
    """(a canonical data: URI, "") for an image that may be shown inline, else (None, why not)."""
    if uri[:14].lower() == "data:image/svg":
        return None, SVG_IMAGE
    if len(uri) > MAX_IMAGE_BYTES * 4 // 3 + 1024:
        return None, f"An image of {_size(len(uri) * 3 // 4)} not shown (over {_size(MAX_IMAGE_BYTES)}); {DOWNLOAD}."
    match = _DATA_URI.match(uri)
    if not match:
        return None, "An image in a format not shown here."
    mime = match.group(1).lower()
    try:
        data = base64.b64decode("".join(match.group(2).split()), validate=True)
    except (binascii.Error, ValueError):
        return None, "An image whose data is damaged."
    if refusal := _image_refusal(mime, data, budget):
        return None, refusal
    budget.images -= len(data)
    uri = f"data:{mime};base64,{base64.b64encode(data).decode()}"
    budget.uri_chars += len(uri)
    return uri, ""


def _image_refusal(mime: str, data: bytes, budget: _Budget) -> str | None:
    if len(data) > MAX_IMAGE_BYTES:
        return f"An image of {_size(len(data))} not shown (over {_size(MAX_IMAGE_BYTES)}); {DOWNLOAD}."
    if len(data) > budget.images:
        return f"An image not shown: the answer's images are over {_size(MAX_ANSWER_IMAGES)}; {DOWNLOAD}."
    size = _dimensions(mime, data)
    if size is None:
        return f"An image that is not a valid {IMAGE_TYPES[mime]}."
    if size[0] * size[1] > MAX_IMAGE_PIXELS:
        return f"An image of {size[0]}×{size[1]} pixels not shown (over {MAX_IMAGE_PIXELS // 1_000_000} megapixels)."
    return None


def _dimensions(mime: str, data: bytes) -> tuple[int, int] | None:
    """(width, height) from the image's header, None if it is not an image of that type."""
    if mime == "image/png" and data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR":
        return struct.unpack(">II", data[16:24])
    if mime == "image/gif" and data[:6] in (b"GIF87a", b"GIF89a") and len(data) >= 10:
        return struct.unpack("<HH", data[6:10])
    if mime == "image/jpeg" and data[:3] == b"\xff\xd8\xff":
        return _jpeg_dimensions(data)
    if mime == "image/webp" and data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return _webp_dimensions(data)
    return None


def _jpeg_dimensions(data: bytes) -> tuple[int, int] | None:
    """From the first start-of-frame segment (SOF0-SOF15 but DHT, JPG and DAC)."""
    at = 2
    while at + 9 <= len(data):
        if data[at] != 0xFF:
            return None
        marker = data[at + 1]
        if marker == 0xFF:  # fill byte
            at += 1
            continue
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            height, width = struct.unpack(">HH", data[at + 5 : at + 9])
            return width, height
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:
            at += 2
            continue
        at += 2 + struct.unpack(">H", data[at + 2 : at + 4])[0]
    return None


def _webp_dimensions(data: bytes) -> tuple[int, int] | None:
    chunk = data[12:16]
    if chunk == b"VP8X" and len(data) >= 30:
        return 1 + int.from_bytes(data[24:27], "little"), 1 + int.from_bytes(data[27:30], "little")
    if chunk == b"VP8L" and len(data) >= 25:
        bits = int.from_bytes(data[21:25], "little")
        return 1 + (bits & 0x3FFF), 1 + ((bits >> 14) & 0x3FFF)
    if chunk == b"VP8 " and len(data) >= 30:
        return int.from_bytes(data[26:28], "little") & 0x3FFF, int.from_bytes(data[28:30], "little") & 0x3FFF
    return None
