"""Written answers: the questions of an Otter assignment that a person grades (`manual: true`), and each
submitted notebook's answer to them, so that course staff can grade them in the tool's pages.

Pure functions over notebook JSON: nothing here runs or renders what a student wrote (lti_service/written
renders it, sanitised). Every size and count is bounded, because the notebooks are uploads. A master notebook
may be in Otter's current format (raw `# BEGIN QUESTION` cells) or in the "v0" format of Otter 1-3 (a
fenced BEGIN QUESTION block in a markdown cell) that many course repositories still use. A student's notebook
marks a written question with `<!-- BEGIN QUESTION -->` ... `<!-- END QUESTION -->` cells; it carries neither
the names nor the points of written questions (Otter 1-3 kept them there in a hidden comment, read if present).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

from .notebook import SHAPE
from .safe_yaml import load_yaml

MAX_QUESTIONS = 100
"""written questions in one assignment (PS 88's week 3 lab, in tests/written_corpus, has 9)"""
MAX_NAME_CHARS = 100
"""characters of a question's name"""
MAX_PROMPT_CHARS = 20_000
"""characters of a question's prompt kept (stored with the assignment; prompts run to a few hundred)"""
MAX_RUBRIC_ITEMS = 50
"""items in one question's rubric"""
MAX_RUBRIC_TEXT = 2_000
"""characters of one rubric item's text"""
MAX_POINTS = 1000
"""largest number of points of a question or (either sign) of a rubric item"""
MAX_REGION_CELLS = 50
"""cells of one answer: a student who deleted the END QUESTION cell must not make one answer the notebook"""
MAX_KEPT_TEXT = 1 << 20
"""characters kept of one text (a cell's source, one output); the rest is counted in "omitted" so the page can
say how much it does not show (it shows less than this)"""
MAX_KEPT_IMAGE = 6 << 20
"""characters kept of one image's base64: above the 4 MB of data (5.6 M characters) a page inlines, so the
renderer decides, and says why it did not show a larger one"""
MAX_OUTPUTS = 50
"""outputs kept of one code cell"""
MAX_ITEMS = 20
"""representations (MIME types) kept of one output, and attachments kept of one markdown cell"""
MAX_CONFIGS = 1000
"""questions, written or autograded, in one master notebook (PS 88's week 3 lab has 16)"""
MAX_CONFIG_CHARS = 1 << 20
"""characters of question configuration (YAML) read from one master: ten full rubrics (50 items of 2,000
characters) fit; the YAML parser is pure Python, so this bounds the time an upload can cost"""
MAX_MARKERS = 10 * MAX_QUESTIONS
"""question markers read in one notebook (a copy-happy student makes a few more than the questions); the
ones after are ordinary cells"""
MARKER_WINDOW = 4096
"""characters at the start of a cell searched for Otter's markers (Otter writes them first in a cell)"""

PLACEHOLDER = "_Type your answer here, replacing this text._"
"""the text of a markdown answer cell in the notebook Otter hands out"""
ANSWER_TAG = "otter_answer_cell"

_BEGIN = re.compile(r"<!--\s*BEGIN\s+QUESTION\s*-->", re.IGNORECASE)
_END = re.compile(r"\s*<!--\s*END\s+QUESTION\s*-->", re.IGNORECASE)
_HIDDEN_CONFIG = re.compile(r"<!--[ \t]*\r?\n[ \t]*BEGIN[ \t]+QUESTION[ \t]*\r?\n", re.IGNORECASE)
_RAW_BEGIN = re.compile(r"#\s+begin\s+question\s*", re.IGNORECASE)  # Otter's own test (assign/blocks.py)
_V0_BEGIN = re.compile(r"begin\s+question", re.IGNORECASE)  # the line after a ``` in Otter 1-3 masters
_V0_SOLUTION = re.compile(r"\s*\*\*SOLUTION:?\*\*", re.IGNORECASE)
_POINTS = re.compile(r"[(\[]\s*(\d{1,4}(?:\.\d{1,2})?)\s*(?:points?|pts?)\.?\s*[)\]]", re.IGNORECASE)
_LABEL = re.compile(r"\b(?:question|problem|exercise|part|q)\s*(\d+[a-z]?(?:[.\-][0-9a-z]{1,5}){0,5})", re.IGNORECASE)
_HEADING = re.compile(r"\s*#{1,6}\s+(.+)|\s*\*\*(.+?)\*\*")


class WrittenError(ValueError):
    """A notebook or a stored question cannot be used; str() says why in a sentence a teacher understands."""


@dataclass(frozen=True)
class RubricItem:
    points: float
    text: str


@dataclass(frozen=True)
class WrittenQuestion:
    name: str
    points: float | None
    """None: the master gives none (Otter then counts 1) or the question came from a handout that says none"""
    prompt: str
    """the prompt's markdown as the notebook has it (trimmed, Otter's markers left out)"""
    rubric: tuple[RubricItem, ...]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-safe form, for the database."""
        rubric = [{"points": item.points, "text": item.text} for item in self.rubric]
        return {"name": self.name, "points": self.points, "prompt": self.prompt, "rubric": rubric}

    @classmethod
    def from_dict(cls, data: Any) -> WrittenQuestion:
        """The question `to_dict` gave, checked again: the database is not trusted to hold what was written."""
        if not isinstance(data, dict) or set(data) != {"name", "points", "prompt", "rubric"}:
            raise WrittenError("a stored written question is not in the expected form")
        name = _name(data["name"] if isinstance(data["name"], str) else None, "a stored written question")
        where = f"the stored question {name!r}"
        prompt = data["prompt"]
        if not isinstance(prompt, str) or len(prompt) > MAX_PROMPT_CHARS:
            raise WrittenError(f"{where} has no valid prompt")
        return cls(name, _points(data["points"], where), prompt, _rubric(data["rubric"], where))


@dataclass(frozen=True)
class Answer:
    question: str
    cells: tuple[dict[str, Any], ...]
    """bounded copies of the answer's cells (the prompt left out): cell_type, source (a str), for markdown cells
    attachments, for code cells outputs; "omitted" counts what was cut ({"source": characters, ...})"""
    digest: str
    """sha256 of the answer's text (cell types and sources, trailing whitespace and empty cells left out, outputs
    too): the same text in two attempts gives the same digest"""
    found: bool
    """False when the notebook has no region for the question (its marker cell was deleted): `cells` are then
    the cells where the answer should be (between the written answers found before and after it), which a
    grader reads instead, and `digest` is theirs, never a blank answer's, so no grade of a blank answer is
    carried over to text nobody read"""
    omitted_cells: int = 0
    """cells of the region past MAX_REGION_CELLS, not in `cells` nor in the digest"""

    @property
    def blank(self) -> bool:
        """Nothing written: no cell with text other than Otter's placeholder."""
        return self.digest == EMPTY_DIGEST


def from_master(master: bytes) -> list[WrittenQuestion]:
    """The written questions of a master notebook, in order, in either of Otter's formats."""
    cells = _cells(master)
    questions = []
    for index, config, head in _configs(cells):
        if config.get("manual") is True:
            prompt = _paragraphs([head] + [_text(c) for c in _prompt_cells(cells, index + 1)])
            questions.append(_from_config(config, prompt))
    return _checked_list(questions)


def from_handout(student: bytes) -> list[WrittenQuestion]:
    """The written questions of the notebook students were given, from Otter's `<!-- BEGIN QUESTION -->`
    markers: for an assignment uploaded as an autograder zip and a student notebook, with no master."""
    cells = _cells(student)
    markers = _markers(cells)
    if len(markers) > MAX_QUESTIONS:
        raise WrittenError(f"the notebook has more than {MAX_QUESTIONS} written questions")
    questions: list[WrittenQuestion] = []
    used: set[str] = set()
    for number, index in enumerate(markers, 1):
        prompt, hidden = _handout_prompt(cells, index)
        name, points = _handout_identity(prompt, hidden, number, used)
        used.add(name)
        questions.append(WrittenQuestion(name, points, prompt[:MAX_PROMPT_CHARS], ()))
    return _checked_list(questions)


def with_prompts(
    master_questions: Sequence[WrittenQuestion], handout_questions: Sequence[WrittenQuestion]
) -> list[WrittenQuestion]:
    """The master's questions with the prompts students saw: the handout's k-th marker is the master's k-th
    written question. When the counts differ (Otter writes no marker for a question without a prompt) the
    pairing is unknown and the master's prompts stay."""
    if len(master_questions) != len(handout_questions):
        return list(master_questions)
    return [replace(q, prompt=h.prompt) for q, h in zip(master_questions, handout_questions, strict=True)]


def answers(submission: bytes, questions: Sequence[WrittenQuestion]) -> dict[str, Answer]:
    """Each question's answer in a submitted notebook, by question name.

    A question's region is found by its prompt (the marker whose prompt text is the question's), else by
    position among the markers no prompt claimed; it runs to the next END or BEGIN QUESTION cell. Students
    delete, duplicate and move cells: a question whose region cannot be found is `found=False`."""
    cells = _cells(submission)
    claimed = _match(_regions(cells), [_key(q.prompt) for q in questions])
    found, gaps = {}, {}
    for number, question in enumerate(questions):
        region = claimed.get(number)
        if region is None:
            gap = _gap(claimed, number, len(cells))  # questions missing side by side share one: read it once
            found[question.name] = replace(
                gaps.get(gap) or gaps.setdefault(gap, _missing(cells, gap)), question=question.name
            )
        else:
            found[question.name] = _answer(question, cells, region)
    return found


# --- notebooks ---------------------------------------------------------------------------------------------


def _cells(data: bytes) -> list[dict[str, Any]]:
    """The notebook's cells (dicts, each with a str source); refuses what is not a notebook or is too big."""
    if excess := SHAPE.excess(data):
        raise WrittenError(f"the notebook has {excess}: it is not a notebook Jupyter wrote")
    try:
        notebook = json.loads(data)
    except (ValueError, RecursionError):
        raise WrittenError("the file is not JSON (is it a .ipynb notebook?)") from None
    if not isinstance(notebook, dict) or not isinstance(notebook.get("cells"), list):
        raise WrittenError("the file is JSON but not a Jupyter notebook")
    return [cell for cell in notebook["cells"] if isinstance(cell, dict)]


def _text(cell: dict[str, Any]) -> str:
    return _joined(cell.get("source"))


def _joined(value: Any) -> str:
    """nbformat's multiline string: a str or a list of str; anything else is treated as empty."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(line, str) for line in value):
        return "".join(value)
    return ""


def _kind(cell: dict[str, Any]) -> str:
    kind = cell.get("cell_type")
    return kind if kind in ("markdown", "code", "raw") else "raw"


def _metadata(cell: dict[str, Any]) -> dict[str, Any]:
    metadata = cell.get("metadata")
    return metadata if isinstance(metadata, dict) else {}


def _is_answer_cell(cell: dict[str, Any]) -> bool:
    tags = _metadata(cell).get("tags")
    return isinstance(tags, list) and ANSWER_TAG in tags


# --- master notebooks --------------------------------------------------------------------------------------


def _configs(cells: list[dict[str, Any]]) -> Iterator[tuple[int, dict[str, Any], str]]:
    """(cell index, config, prompt text in the same cell) of every question, written or not, in bounded work."""
    budget, count = MAX_CONFIG_CHARS, 0
    for index, cell in enumerate(cells):
        if (found := _question_start(cell)) is None:
            continue
        budget, count = budget - len(found[0]), count + 1
        if budget < 0 or count > MAX_CONFIGS:
            raise WrittenError(f"the notebook has more than {MAX_CONFIGS} questions or {MAX_CONFIG_CHARS} characters "
                               "of question configuration")  # fmt: skip
        yield index, _config(found[0], f"the question in cell {index + 1}"), found[1]


def _paragraphs(parts: list[str]) -> str:
    return "\n\n".join(part.strip() for part in parts if part.strip())


def _question_start(cell: dict[str, Any]) -> tuple[str, str] | None:
    """(config YAML, prompt text in the same cell) if the cell starts a question, in either format."""
    text, kind = _text(cell), _kind(cell)
    fenced = _otter_fence(text) if kind == "markdown" else None
    if kind == "raw" or fenced is not None:
        body = text if fenced is None else fenced
        first = body.split("\n", 1)[0]
        return (body, "") if _RAW_BEGIN.match(first) else None
    return _v0_block(text) if kind == "markdown" else None


def _otter_fence(text: str) -> str | None:
    """The inside of a markdown cell that is one ```otter block (Otter's stand-in for a raw cell)."""
    lines = text.strip().split("\n")
    if len(lines) >= 2 and lines[0].strip() == "```otter" and lines[-1].strip() == "```":
        return "\n".join(lines[1:-1])
    return None


def _v0_block(text: str) -> tuple[str, str] | None:
    """Otter 1-3: a ``` line, then BEGIN QUESTION, the YAML, and a closing ``` line, anywhere in the cell."""
    lines = text.split("\n")
    for start, line in enumerate(lines[:-1]):
        if line.startswith("```") and _V0_BEGIN.match(lines[start + 1].strip()):
            end = next((i for i in range(start + 2, len(lines)) if lines[i].startswith("```")), len(lines))
            config = "\n".join(lines[start + 2 : end])
            return config, "\n".join(lines[:start] + lines[end + 1 :])
    return None


def _prompt_cells(cells: list[dict[str, Any]], start: int) -> list[dict[str, Any]]:
    """The markdown cells after a question's start that are its prompt: up to a solution, code, or a boundary."""
    found = []
    for cell in itertools.islice(cells, start, None):
        text = _text(cell)
        if _kind(cell) != "markdown" or _question_start(cell) or _otter_fence(text) is not None:
            break
        if _V0_SOLUTION.match(text):
            break
        found.append(cell)
    return found


def _config(text: str, where: str) -> dict[str, Any]:
    try:
        config = load_yaml(text)
    except ValueError as error:
        raise WrittenError(f"the configuration of {where} {error}") from None
    if not isinstance(config, dict):
        raise WrittenError(f"the configuration of {where} is not a list of settings (name: ..., points: ...)")
    return config


def _from_config(config: dict[str, Any], prompt: str) -> WrittenQuestion:
    name = _name(config.get("name"), "a written question")
    where = f"question {name!r}"
    rubric = _rubric(config.get("rubric", []), where)
    return WrittenQuestion(name, _points(config.get("points"), where), prompt[:MAX_PROMPT_CHARS], rubric)


def _checked_list(questions: list[WrittenQuestion]) -> list[WrittenQuestion]:
    if len(questions) > MAX_QUESTIONS:
        raise WrittenError(f"the notebook has more than {MAX_QUESTIONS} written questions")
    names = [q.name for q in questions]
    if twice := sorted({n for n in names if names.count(n) > 1}):
        raise WrittenError(f"two written questions have the same name: {', '.join(map(repr, twice))}")
    return questions


def _name(value: Any, where: str) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise WrittenError(f"{where} has no name (add 'name: q1' to its configuration)")
    name = str(value).strip()
    if not name or len(name) > MAX_NAME_CHARS or not name.isprintable():
        raise WrittenError(f"{where} has a name that is empty, longer than {MAX_NAME_CHARS} characters or unprintable")
    return name


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value) if abs(value) <= MAX_POINTS else None


def _points(value: Any, where: str) -> float | None:
    if value is None:
        return None
    points = _number(value)
    if points is None or points < 0:
        raise WrittenError(f"{where}: points must be a number from 0 to {MAX_POINTS}, not {str(value)[:50]!r}")
    return points


def _rubric(value: Any, where: str) -> tuple[RubricItem, ...]:
    """A rubric: a list of items, each `points:` (a number) and `text:` (what earns them)."""
    if value is None:
        return ()
    if not isinstance(value, list) or len(value) > MAX_RUBRIC_ITEMS:
        raise WrittenError(f"{where}: the rubric must be a list of at most {MAX_RUBRIC_ITEMS} items (- points: 1)")
    return tuple(_rubric_item(item, number, where) for number, item in enumerate(value, 1))


def _rubric_item(item: Any, number: int, where: str) -> RubricItem:
    if not isinstance(item, dict) or "points" not in item or "text" not in item:
        raise WrittenError(f"{where}: rubric item {number} needs both 'points:' and 'text:'")
    points, text = _number(item["points"]), item["text"]
    if points is None:
        raise WrittenError(f"{where}: rubric item {number} has points that are not a number from -{MAX_POINTS} "
                           f"to {MAX_POINTS}")  # fmt: skip
    if not isinstance(text, str) or not text.strip() or len(text) > MAX_RUBRIC_TEXT:
        raise WrittenError(f"{where}: rubric item {number} needs a text of 1 to {MAX_RUBRIC_TEXT} characters")
    return RubricItem(points, text.strip())


# --- student notebooks -------------------------------------------------------------------------------------


def _begin(cell: dict[str, Any]) -> re.Match[str] | None:
    if _kind(cell) != "markdown":
        return None
    return _BEGIN.search(_text(cell)[:MARKER_WINDOW])


def _ends(cell: dict[str, Any]) -> bool:
    return _kind(cell) == "markdown" and bool(_END.match(_text(cell)[:MARKER_WINDOW]))


def _markers(cells: list[dict[str, Any]]) -> list[int]:
    return [index for index, cell in enumerate(cells) if _begin(cell)]


def _handout_prompt(cells: list[dict[str, Any]], index: int) -> tuple[str, str | None]:
    """The prompt of the marker at `index` (its text after the marker, then the locked markdown cells Otter
    gives a prompt of several cells), and the YAML of Otter 1-3's hidden config comment if there is one."""
    text, hidden = _marker_text(cells[index])
    return _paragraphs(
        [text] + [_text(cell)[: 2 * MAX_PROMPT_CHARS] for cell in _continuation(cells, index + 1)]
    ), hidden


def _marker_text(cell: dict[str, Any]) -> tuple[str, str | None]:
    """A marker cell's text after the marker (its prompt's first part), and its hidden config if any."""
    marker = _begin(cell)
    start = marker.end() if marker else 0
    return _hidden_config(_text(cell)[start : start + 2 * MAX_PROMPT_CHARS])


def _continuation(cells: list[dict[str, Any]], start: int) -> list[dict[str, Any]]:
    found = []
    for cell in cells[start : start + MAX_REGION_CELLS]:
        locked = _metadata(cell).get("editable") is False
        if _kind(cell) != "markdown" or not locked or _is_answer_cell(cell) or _begin(cell) or _ends(cell):
            break
        found.append(cell)
    return found


def _hidden_config(text: str) -> tuple[str, str | None]:
    """Otter 1-3 kept a question's config in the handout as `<!--\\nBEGIN QUESTION\\n...\\n-->`."""
    match = _HIDDEN_CONFIG.search(text)
    end = text.find("-->", match.end()) if match else -1
    if not match or end < 0:
        return text, None
    return text[: match.start()] + text[end + 3 :], text[match.end() : end]


def _handout_identity(prompt: str, hidden: str | None, number: int, used: set[str]) -> tuple[str, float | None]:
    """A name and points for a handout's question: from the hidden config, else read from the prompt."""
    config: dict[str, Any] = {}
    if hidden is not None:
        try:
            loaded = load_yaml(hidden)
            config = loaded if isinstance(loaded, dict) else {}
        except ValueError:
            pass
    try:
        name = _name(config.get("name"), "")
    except WrittenError:
        name = ""
    if not name or name in used:
        name = _unique(_label(prompt) or f"written-{number}", used)
    points = _number(config.get("points"))
    if points is None or points < 0:
        mention = _POINTS.search(prompt[:MARKER_WINDOW])
        points = float(mention.group(1)) if mention else None
    return name, points


def _label(prompt: str) -> str:
    """A slug of the prompt's "Question 1.2" label, else of its first heading or bold text."""
    first = _HEADING.match(prompt[:MARKER_WINDOW])
    title = (first.group(1) or first.group(2)) if first else ""
    label = _LABEL.search(title) or _LABEL.search(prompt[:200])
    if label:
        title = "question-" + label.group(1)
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")[:40].strip("-")


def _unique(name: str, used: set[str]) -> str:
    if name not in used:
        return name
    return next(f"{name}-{n}" for n in range(2, len(used) + 3) if f"{name}-{n}" not in used)


# --- answers -----------------------------------------------------------------------------------------------


def _key(text: str) -> str:
    """A prompt compared with another: HTML comments (Otter's markers and hidden config) out, whitespace one space."""
    return " ".join(_without_comments(text[: 2 * MAX_PROMPT_CHARS]).split())


def _without_comments(text: str) -> str:
    """The text without its <!-- --> comments, in linear time (a regex could rescan an unclosed one)."""
    parts, at = [], 0
    while (start := text.find("<!--", at)) >= 0:
        parts.append(text[at:start])
        end = text.find("-->", start + 4)
        at = len(text) if end < 0 else end + 3
    parts.append(text[at:])
    return "".join(parts)


@dataclass(frozen=True)
class _Region:
    head: int
    """the marker cell's index"""
    key: str
    skipped: frozenset[int]
    """cells of the region that are copies of its marker (a student duplicated it)"""
    end: int
    """the index of the cell after the region"""


def _regions(cells: list[dict[str, Any]]) -> list[_Region]:
    """The regions in the notebook, in order; a copy of a marker cell inside its region joins it."""
    regions: list[_Region] = []
    index = 0
    while index < len(cells) and len(regions) < MAX_MARKERS:
        if not _begin(cells[index]):
            index += 1
            continue
        own = _key(_marker_text(cells[index])[0])
        end, skipped = index + 1, set()
        while end < len(cells) and not _ends(cells[end]):
            if _begin(cells[end]):
                if _key(_marker_text(cells[end])[0]) != own:
                    break
                skipped.add(end)
            end += 1
        regions.append(_Region(index, _key(_handout_prompt(cells, index)[0]), frozenset(skipped), end))
        index = max(end, index + 1)
    return regions


def _match(regions: list[_Region], keys: list[str]) -> dict[int, _Region]:
    """Question number -> region: by equal prompts first; then, in each run of questions left between two
    matched ones, by position, if as many regions are left between those two (a prompt the student edited)."""
    claimed: dict[int, int] = {}
    for number, key in enumerate(keys):
        taken = set(claimed.values())
        position = next((i for i, r in enumerate(regions) if key and r.key == key and i not in taken), None)
        if position is not None:
            claimed[number] = position
    number = 0
    while number < len(keys):
        if number in claimed:
            number += 1
            continue
        gap_end = next((n for n in range(number, len(keys)) if n in claimed), len(keys))
        low = claimed[number - 1] if number > 0 else -1
        high = claimed[gap_end] if gap_end < len(keys) else len(regions)
        spare = [i for i in range(low + 1, high) if i not in claimed.values()]
        if len(spare) == gap_end - number:
            claimed.update(zip(range(number, gap_end), spare, strict=True))
        number = gap_end
    return {number: regions[position] for number, position in claimed.items()}


def _answer(question: WrittenQuestion, cells: list[dict[str, Any]], region: _Region) -> Answer:
    inside = [i for i in range(region.head + 1, region.end) if i not in region.skipped]
    inside = _without_prompt(cells, inside, _key(question.prompt))
    kept = inside[:MAX_REGION_CELLS]
    copies = tuple(_copy_cell(cells[i]) for i in kept)
    return Answer(question.name, copies, _digest([cells[i] for i in kept]), True, len(inside) - len(kept))


def _gap(claimed: dict[int, _Region], number: int, count: int) -> range:
    """Where question `number`'s answer is, when its marker is gone: after the region of the nearest question
    before it that was found, up to the marker of the nearest one after it."""
    before = [region.end for n, region in claimed.items() if n < number]
    after = [region.head for n, region in claimed.items() if n > number]
    return range(max(before, default=0), min(after, default=count))


def _missing(cells: list[dict[str, Any]], gap: range) -> Answer:
    """The answer of a question whose marker is gone (its name is the caller's to set): the gap's first
    MAX_REGION_CELLS cells that are not markers, read no further."""
    kept, at = [], gap.start
    for at in gap:
        if len(kept) == MAX_REGION_CELLS:
            break
        if not _begin(cells[at]) and not _ends(cells[at]):
            kept.append(at)
    else:
        at = gap.stop
    copies = tuple(_copy_cell(cells[i]) for i in kept)
    digest = hashlib.sha256(b"not found\n" + _digest([cells[i] for i in kept]).encode()).hexdigest()
    return Answer("", copies, digest, False, gap.stop - at)


def _without_prompt(cells: list[dict[str, Any]], inside: list[int], prompt_key: str) -> list[int]:
    """Leaves out the leading cells that are the rest of the prompt (Otter 7 hands out a prompt of several
    markdown cells as several locked cells): those Otter would, and only if their text is in the prompt."""
    rest = _continuation(cells, inside[0]) if inside else []
    start = 0
    for cell in rest:
        key = _key(_text(cell))
        if not key or key not in prompt_key:
            break
        start += 1
    return inside[start:]


def _normalised(cell: dict[str, Any]) -> str:
    text = "\n".join(line.rstrip() for line in _text(cell).split("\n")).strip("\n")
    return "" if _kind(cell) == "markdown" and text.strip() == PLACEHOLDER else text


def _digest(cells: list[dict[str, Any]]) -> str:
    parts = [[_kind(cell), text] for cell in cells if (text := _normalised(cell))]
    return hashlib.sha256(json.dumps(parts, ensure_ascii=False).encode()).hexdigest()


EMPTY_DIGEST = _digest([])
"""the digest of an answer with nothing written"""


# --- bounded copies ----------------------------------------------------------------------------------------


def _copy_cell(cell: dict[str, Any]) -> dict[str, Any]:
    kind, omitted = _kind(cell), {}
    copy: dict[str, Any] = {"cell_type": kind, "source": _cut(_text(cell), MAX_KEPT_TEXT, "source", omitted)}
    if kind == "code":
        outputs = cell.get("outputs") if isinstance(cell.get("outputs"), list) else []
        copy["outputs"] = [_copy_output(o) for o in outputs[:MAX_OUTPUTS] if isinstance(o, dict)]
        if len(outputs) > MAX_OUTPUTS:
            omitted["outputs"] = len(outputs) - MAX_OUTPUTS
    if kind == "markdown" and isinstance(cell.get("attachments"), dict):
        copy["attachments"] = _copy_bundles(cell["attachments"])
    if omitted:
        copy["omitted"] = omitted
    return copy


def _copy_output(output: dict[str, Any]) -> dict[str, Any]:
    kind, omitted = output.get("output_type"), {}
    if kind == "stream":
        name = output.get("name") if output.get("name") in ("stdout", "stderr") else "stdout"
        copy = {"output_type": kind, "name": name, "text": _cut(_joined(output.get("text")), MAX_KEPT_TEXT,
                                                                 "text", omitted)}  # fmt: skip
    elif kind == "error":
        traceback = output.get("traceback")
        lines = [line for line in traceback if isinstance(line, str)] if isinstance(traceback, list) else []
        copy = {"output_type": kind, "traceback": _cut("\n".join(lines), MAX_KEPT_TEXT, "traceback", omitted)}
        for field in ("ename", "evalue"):
            value = output.get(field)
            copy[field] = _cut(value if isinstance(value, str) else "", 1000, field, omitted)
    elif kind in ("execute_result", "display_data") and isinstance(output.get("data"), dict):
        copy = {"output_type": kind, "data": _copy_bundle(output["data"], omitted)}
    else:
        copy = {"output_type": "unknown"}
    if omitted:
        copy["omitted"] = omitted
    return copy


def _copy_bundles(attachments: dict[str, Any]) -> dict[str, dict[str, str]]:
    """A markdown cell's attachments (images pasted into it): name -> MIME type -> data."""
    found = {}
    for name, bundle in list(attachments.items())[:MAX_ITEMS]:
        if isinstance(name, str) and len(name) <= 200 and isinstance(bundle, dict):
            found[name] = _copy_bundle(bundle, {})
    return found


def _copy_bundle(bundle: dict[str, Any], omitted: dict[str, int]) -> dict[str, str]:
    """A MIME bundle: type -> text (JSON values, widgets' and Plotly's, as their JSON)."""
    found = {}
    for mime, value in list(bundle.items())[:MAX_ITEMS]:
        if not isinstance(mime, str) or len(mime) > 100:
            continue
        text = _joined(value) if isinstance(value, str | list) else ""
        if not text and isinstance(value, dict | list):
            text = "{}"  # a JSON representation (a widget's view, Plotly's figure): only its type is used
        image = mime.startswith("image/")
        found[mime] = _cut(text, MAX_KEPT_IMAGE if image else MAX_KEPT_TEXT, mime, omitted, whole=image)
    return found


def _cut(text: str, limit: int, field: str, omitted: dict[str, int], whole: bool = False) -> str:
    """At most `limit` characters of text, the rest counted in omitted[field]; `whole`: all or nothing (an
    image cut in two is no image)."""
    if len(text) <= limit:
        return text
    omitted[field] = len(text) if whole else len(text) - limit
    return "" if whole else text[:limit]
