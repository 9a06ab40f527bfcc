"""Written questions (`manual: true`): found in master notebooks of both Otter formats and in handouts, and each
answer read from a submitted notebook, whatever the student did to its cells.

The handout is the one the real `otter assign` (Otter 7) writes from a master built here, once per module;
the real course notebook is PS 88's week 3 lab (tests/written_corpus/ps88-lab3/SOURCE.md)."""

from __future__ import annotations

import copy
import json
import random
import subprocess
import sys

import pytest

from autograder.notebook import SHAPE
from autograder.written import (
    EMPTY_DIGEST,
    MAX_CONFIG_CHARS,
    MAX_CONFIGS,
    MAX_REGION_CELLS,
    PLACEHOLDER,
    RubricItem,
    WrittenError,
    WrittenQuestion,
    answers,
    from_handout,
    from_master,
    with_prompts,
)
from tests.written_corpus.notebooks import (
    PS88,
    PS88_WRITTEN,
    answer_cells,
    code,
    dump,
    image_output,
    marker_indices,
    md,
    notebook,
    png,
    ps88_submission,
    raw,
    source,
)

Q1_PROMPT = "**Question 1.** Which rate does the user feel while the answer streams? (2 points)"
Q1_MORE = "Answer in one or two sentences."
Q3_PROMPT = "**Question 3.** Plot tokens per second against model size."
RUBRIC = "rubric:\n- points: 1\n  text: Names the decode rate\n- points: 1\n  text: Says why it is sequential\n"


def master_cells(q1_config: str = f"name: q1\npoints: 2\nmanual: true\n{RUBRIC}") -> list[dict]:
    return [
        raw("# ASSIGNMENT CONFIG\nname: written-test\ninit_cell: false\ncheck_all_cell: false\nexport_cell: false\n"
            "tests:\n  ok_format: false\n"),
        md("# Decode: written questions"),
        raw(f"# BEGIN QUESTION\n{q1_config}"),
        md(Q1_PROMPT),
        md(Q1_MORE),
        raw("# BEGIN SOLUTION"),
        md("The decode rate: one token per step, each step reads every weight."),
        raw("# END SOLUTION"),
        raw("# END QUESTION"),
        raw("# BEGIN QUESTION\nname: q2\npoints: 1\n"),
        md("**Question 2.** Set `x` to 2."),
        raw("# BEGIN SOLUTION"),
        code("x = 2  # SOLUTION"),
        raw("# END SOLUTION"),
        raw("# BEGIN TESTS"),
        code("def test_x(x):\n    assert x == 2"),
        raw("# END TESTS"),
        raw("# END QUESTION"),
        raw("# BEGIN QUESTION\nname: q3\npoints: 3\nmanual: true\n"),
        md(Q3_PROMPT),
        raw("# BEGIN SOLUTION"),
        code("plot_tokens_per_second()  # SOLUTION"),
        raw("# END SOLUTION"),
        raw("# END QUESTION"),
        md("The end."),
    ]  # fmt: skip


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict:
    """The master notebook and the handout the real `otter assign` writes from it."""
    work = tmp_path_factory.mktemp("written")
    master = dump(notebook(master_cells()))
    (work / "master.ipynb").write_bytes(master)
    command = [sys.executable, "-m", "otter", "assign", "--no-run-tests", "--no-pdfs", "master.ipynb", "dist"]
    done = subprocess.run(command, cwd=work, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return {"master": master, "student": json.loads((work / "dist" / "student" / "master.ipynb").read_bytes())}


def submit(student: dict, q1: str | None = None, q3: str | None = None, q3_outputs: list | None = None) -> dict:
    """The handout with the student's answers: q1 in its markdown answer cell, q3 in its code cell."""
    nb = copy.deepcopy(student)
    cells = answer_cells(nb)
    if q1 is not None:
        cells[0]["source"] = q1
    if q3 is not None:
        cells[-1]["source"] = q3
        cells[-1]["outputs"] = q3_outputs or []
    return nb


# --- master notebooks ----------------------------------------------------------------------------------------


def test_from_master_finds_the_written_questions_their_points_and_rubric(built):
    questions = from_master(built["master"])
    assert [q.name for q in questions] == ["q1", "q3"]
    assert [q.points for q in questions] == [2.0, 3.0]
    assert questions[0].rubric == (
        RubricItem(1.0, "Names the decode rate"),
        RubricItem(1.0, "Says why it is sequential"),
    )
    assert questions[1].rubric == ()
    assert questions[0].prompt == f"{Q1_PROMPT}\n\n{Q1_MORE}"
    assert questions[1].prompt == Q3_PROMPT


def test_otter_accepts_the_rubric_and_writes_no_name_nor_points_of_written_questions(built):
    """The facts the design rests on: the handout carries the prompts but not the manual questions' config."""
    text = json.dumps(built["student"])
    assert "Names the decode rate" not in text and "manual" not in text
    markers = marker_indices(built["student"])
    assert len(markers) == 2
    assert source(built["student"]["cells"][markers[0]]).startswith("<!-- BEGIN QUESTION -->")


def test_a_question_without_manual_or_with_manual_false_is_not_written():
    cells = master_cells("name: q1\npoints: 2\nmanual: false\n")
    assert [q.name for q in from_master(dump(notebook(cells)))] == ["q3"]


@pytest.mark.parametrize(
    ("rubric", "words"),
    [
        ("rubric: two points for a good answer\n", "must be a list"),
        ("rubric:\n- points: 1\n", "rubric item 1 needs both"),
        ("rubric:\n- text: Good\n", "needs both"),
        ("rubric:\n- points: two\n  text: Good\n", "rubric item 1 has points that are not a number"),
        ("rubric:\n- points: true\n  text: Good\n", "not a number"),
        ("rubric:\n- points: 5000\n  text: Good\n", "from -1000 to 1000"),
        ("rubric:\n- points: .nan\n  text: Good\n", "not a number"),
        ("rubric:\n- points: 1\n  text: ''\n", "a text of 1 to 2000"),
        (f"rubric:\n- points: 1\n  text: {'x' * 2001}\n", "a text of 1 to 2000"),
        ("rubric:\n" + "- points: 1\n  text: Good\n" * 51, "at most 50 items"),
        ("rubric:\n- [1, Good]\n", "needs both"),
    ],
)
def test_a_malformed_rubric_is_refused_naming_the_question(rubric, words):
    cells = master_cells(f"name: q1\npoints: 2\nmanual: true\n{rubric}")
    with pytest.raises(WrittenError, match=words) as refused:
        from_master(dump(notebook(cells)))
    assert "question 'q1'" in str(refused.value)


def test_fifty_rubric_items_of_2000_characters_are_accepted():
    items = "".join(f"- points: {-1 if n % 2 else 1000}\n  text: {'x' * 2000}\n" for n in range(50))
    [q1, _] = from_master(dump(notebook(master_cells(f"name: q1\npoints: 2\nmanual: true\nrubric:\n{items}"))))
    assert len(q1.rubric) == 50 and {item.points for item in q1.rubric} == {-1.0, 1000.0}


@pytest.mark.parametrize(
    ("config", "words"),
    [
        ("points: 2\nmanual: true\n", "has no name"),
        ("name: q1\npoints: -1\nmanual: true\n", "points must be a number from 0"),
        ("name: q1\npoints: [1, 1]\nmanual: true\n", "points must be a number"),
        ("name: q3\nmanual: true\n", "two written questions have the same name: 'q3'"),
        ("name: q1\nmanual: true\nrubric: &a [1]\nother: *a\n", "uses a YAML alias"),
        ("name: [q1\nmanual: true\n", "is not valid YAML"),
        ("- name: q1\n", "is not a list of settings"),
    ],
)
def test_a_malformed_question_config_is_refused(config, words):
    with pytest.raises(WrittenError, match=words):
        from_master(dump(notebook(master_cells(config))))


def test_question_configurations_are_bounded_in_total():
    padding = "# " + "x" * 100_000 + "\n"
    long = [raw(f"# BEGIN QUESTION\nname: q{n}\n{padding}") for n in range(MAX_CONFIG_CHARS // 100_000 + 1)]
    many = [raw(f"# BEGIN QUESTION\nname: q{n}\n") for n in range(MAX_CONFIGS + 1)]
    for cells in (long, many):
        with pytest.raises(WrittenError, match="characters of question configuration"):
            from_master(dump(notebook(cells)))
    assert len(from_master(dump(notebook(long[:-1] + many[:-12])))) == 0


def test_the_v0_master_format_of_otter_1_to_3():
    cells = [
        md("```\nBEGIN ASSIGNMENT\nrequirements: requirements.txt\n```"),
        md("**Question 1a.** Why is decoding sequential? (3 points)\n```\nBEGIN QUESTION\nname: q1a\nmanual: true\n"
           "points: 3\nrubric:\n- points: 3\n  text: Each token needs the previous one\n```\n"),
        md("**SOLUTION**: each token needs the previous one"),
        md("**Question 1b.** Set `n`.\n```\nBEGIN QUESTION\nname: q1b\n```"),
        code("n = 3 # SOLUTION"),
        code("## Test ##\nn == 3"),
        md("```\nBEGIN QUESTION\nname: q1c\nmanual: True\n```\n**Question 1c.** Plot the rates."),
        md("Use a log scale."),
        code("plot() # SOLUTION"),
    ]  # fmt: skip
    questions = from_master(dump(notebook(cells)))
    assert [(q.name, q.points) for q in questions] == [("q1a", 3.0), ("q1c", None)]
    assert questions[0].prompt == "**Question 1a.** Why is decoding sequential? (3 points)"
    assert questions[0].rubric == (RubricItem(3.0, "Each token needs the previous one"),)
    assert questions[1].prompt == "**Question 1c.** Plot the rates.\n\nUse a log scale."


def test_otters_fenced_stand_in_for_raw_cells():
    cells = [md(f"```otter\n{source(c)}\n```") if c["cell_type"] == "raw" else c for c in master_cells()]
    assert [(q.name, q.points, len(q.rubric)) for q in from_master(dump(notebook(cells)))] == [
        ("q1", 2.0, 2),
        ("q3", 3.0, 0),
    ]


# --- handouts ------------------------------------------------------------------------------------------------


def test_from_handout_finds_the_regions_otter_writes(built):
    questions = from_handout(json.dumps(built["student"]).encode())
    assert [(q.name, q.points, q.rubric) for q in questions] == [("question-1", 2.0, ()), ("question-3", None, ())]
    assert [q.prompt for q in questions] == [f"{Q1_PROMPT}\n\n{Q1_MORE}", Q3_PROMPT]


def test_with_prompts_takes_the_handouts_prompts_when_the_counts_agree(built):
    master = from_master(built["master"])
    handout = [WrittenQuestion(f"h{n}", None, f"Prompt {n} as handed out", ()) for n in range(2)]
    paired = with_prompts(master, handout)
    assert [(q.name, q.points, q.prompt, q.rubric) for q in paired] == [
        ("q1", 2.0, "Prompt 0 as handed out", master[0].rubric),
        ("q3", 3.0, "Prompt 1 as handed out", ()),
    ]
    assert with_prompts(master, handout[:1]) == master


def test_handout_names_and_points_come_from_the_prompts():
    cells = [
        md("<!-- BEGIN QUESTION -->\n\n### Question 2.1: Bandwidth [3 pts]"),
        md(PLACEHOLDER),
        md("<!-- END QUESTION -->\n\n<!-- BEGIN QUESTION -->\n\n**Q2b** Explain (1.5 points)."),
        md(PLACEHOLDER),
        md("<!-- END QUESTION -->\n\n<!-- BEGIN QUESTION -->\n\nWhy? (worth some points)"),
        md("<!-- END QUESTION -->\n\n<!-- BEGIN QUESTION -->\n\n**Question 2.1** again"),
        md("<!-- END QUESTION -->\n\n<!-- BEGIN QUESTION -->\n\n## A heading, no number"),
        md("<!-- END QUESTION -->\n\n<!-- BEGIN QUESTION -->\n\n"),
    ]
    questions = from_handout(dump(notebook(cells)))
    assert [(q.name, q.points) for q in questions] == [
        ("question-2-1", 3.0),
        ("question-2b", 1.5),
        ("written-3", None),
        ("question-2-1-2", None),
        ("a-heading-no-number", None),
        ("written-6", None),
    ]


def test_the_course_handout_of_otter_2_names_its_questions_in_a_hidden_comment():
    """Otter 1-3 kept a written question's config in the handout (`<!--\\nBEGIN QUESTION\\nname: ...-->`)."""
    handout = from_handout((PS88 / "student.ipynb").read_bytes())
    assert [q.name for q in handout] == PS88_WRITTEN
    assert all("BEGIN QUESTION" not in q.prompt and "<!--" not in q.prompt for q in handout)


# --- the real course's notebooks ---------------------------------------------------------------------------


def test_from_master_finds_every_written_question_of_the_course_notebook():
    questions = from_master((PS88 / "master.ipynb").read_bytes())
    assert [q.name for q in questions] == PS88_WRITTEN
    assert all(q.points is None and q.rubric == () for q in questions)
    prompts = {q.name: q.prompt for q in questions}
    assert prompts["q2c"] == (
        "In reality, Biden won 81.3 million votes. \n\n**Question 2c. How close was your answer to the real "
        "election? Compare this to the cases where you flipped 10 coins at a time.**"
    )
    assert (
        prompts["q4d"]
        == "**Two groups should have similar probabilities, with one group fairly different. Why is the case?**"
    )
    assert prompts["q4f"] == prompts["q4g"]  # the course asks the same thing twice


def test_the_course_handouts_prompts_are_the_masters():
    master = from_master((PS88 / "master.ipynb").read_bytes())
    handout = from_handout((PS88 / "student.ipynb").read_bytes())
    assert [" ".join(q.prompt.split()) for q in handout] == [" ".join(q.prompt.split()) for q in master]
    assert [q.name for q in with_prompts(master, handout)] == PS88_WRITTEN


def test_answers_in_the_course_notebook_are_returned_exactly_as_written():
    submission, expected = ps88_submission()
    master = from_master((PS88 / "master.ipynb").read_bytes())
    found = answers(submission, master)
    assert list(found) == PS88_WRITTEN
    for name in PS88_WRITTEN:
        assert found[name].found and not found[name].blank
        assert found[name].cells == (expected[name],), name
    assert len({a.digest for a in found.values()}) == len(PS88_WRITTEN)
    by_handout = answers(submission, from_handout((PS88 / "student.ipynb").read_bytes()))
    assert [a.cells for a in by_handout.values()] == [a.cells for a in found.values()]


def test_the_course_handout_unanswered_is_blank_but_found():
    found = answers((PS88 / "student.ipynb").read_bytes(), from_master((PS88 / "master.ipynb").read_bytes()))
    markdown = ["q2c", "q3c", "q4b", "q4d", "q4f", "q4g"]
    assert all(found[n].found and found[n].blank and found[n].digest == EMPTY_DIGEST for n in markdown)
    assert all(found[n].found and not found[n].blank for n in ("q3a", "q3b", "q"))  # handed-out code: "..."


# --- answers -------------------------------------------------------------------------------------------------


def test_answers_are_the_text_written(built):
    plot = image_output(png(4, 3))
    nb = submit(built["student"], q1="The **decode** rate.", q3="plot_tokens_per_second()", q3_outputs=[plot])
    found = answers(dump(nb), from_master(built["master"]))
    assert found["q1"].cells == ({"cell_type": "markdown", "source": "The **decode** rate."},)
    [q3] = found["q3"].cells
    assert q3["source"] == "plot_tokens_per_second()"
    assert q3["outputs"] == [{"output_type": "display_data", "data": plot["data"]}]
    assert found["q1"].found and found["q3"].found


def test_the_same_text_has_the_same_digest_and_other_text_another(built):
    questions = from_master(built["master"])

    def digests(nb: dict) -> dict[str, str]:
        return {name: a.digest for name, a in answers(dump(nb), questions).items()}

    first = submit(built["student"], q1="Decode rate.", q3="plot()", q3_outputs=[image_output(png(2, 2))])
    again = submit(built["student"], q1="Decode rate.   \n\n", q3="plot()\n", q3_outputs=[image_output(png(9, 9))])
    for cell in again["cells"]:
        cell["metadata"]["collapsed"] = True
        cell["execution_count"] = 7
    again["cells"].insert(marker_indices(again)[0] + 3, md("   \n"))  # an empty cell added in the answer
    changed = submit(built["student"], q1="Prefill rate.", q3="plot()")
    assert digests(first) == digests(again)
    assert digests(changed)["q1"] != digests(first)["q1"]
    assert digests(changed)["q3"] == digests(first)["q3"]
    assert digests(built["student"])["q1"] == EMPTY_DIGEST


def test_a_deleted_marker_cell_loses_that_answer_only(built):
    nb = submit(built["student"], q1="mine", q3="plot()")
    del nb["cells"][marker_indices(nb)[1]]
    found = answers(dump(nb), from_master(built["master"]))
    assert not found["q3"].found and found["q3"].digest != EMPTY_DIGEST
    assert found["q1"].cells == ({"cell_type": "markdown", "source": "mine"},)


def test_an_answer_whose_marker_was_deleted_is_shown_and_never_taken_for_a_blank_one(built):
    """A student deletes a written question's marker and answers below it: the grader is shown the cells
    where the answer should be, and their digest is never a blank answer's (a grade given to the blank answer
    of an earlier attempt must not carry over to text nobody read)."""
    questions = from_master(built["master"])
    handed_out = answers(dump(built["student"]), questions)["q3"]
    nb = submit(built["student"], q1="mine")
    del nb["cells"][marker_indices(nb)[1]]
    nb["cells"].append({"cell_type": "code", "source": "answer_below_the_marker()", "metadata": {}, "outputs": []})
    found = answers(dump(nb), questions)["q3"]
    assert not found.found and not found.blank and found.digest not in (handed_out.digest, EMPTY_DIGEST)
    assert "answer_below_the_marker()" in [cell["source"] for cell in found.cells]
    assert "mine" not in [cell["source"] for cell in found.cells]  # q1's answer is q1's, not q3's
    nb["cells"][-1]["source"] = "another_answer()"
    assert answers(dump(nb), questions)["q3"].digest != found.digest


@pytest.mark.parametrize("where", [0, 1, 2, 3])
def test_a_duplicated_marker_cell_keeps_the_answer(built, where):
    nb = submit(built["student"], q1="mine", q3="plot()")
    first = marker_indices(nb)[0]
    nb["cells"].insert(first + where, copy.deepcopy(nb["cells"][first]))
    found = answers(dump(nb), from_master(built["master"]))
    assert [c["source"] for c in found["q1"].cells] == ["mine"]
    assert [c["source"] for c in found["q3"].cells] == ["plot()"]


def test_regions_moved_around_are_found_by_their_prompts(built):
    nb = submit(built["student"], q1="mine", q3="plot()")
    q1, q3 = marker_indices(nb)
    end = next(i for i in range(q3 + 1, len(nb["cells"])) if "END QUESTION" in source(nb["cells"][i]))
    nb["cells"] = nb["cells"][q3 : end + 1] + nb["cells"][:q3] + nb["cells"][end + 1 :]
    found = answers(dump(nb), from_master(built["master"]))
    assert [c["source"] for c in found["q1"].cells] == ["mine"]
    assert [c["source"] for c in found["q3"].cells] == ["plot()"]


def test_a_prompt_the_student_edited_is_found_by_its_position(built):
    nb = submit(built["student"], q1="mine", q3="plot()")
    nb["cells"][marker_indices(nb)[0]]["source"] = "<!-- BEGIN QUESTION -->\n\nI rewrote the question."
    found = answers(dump(nb), from_master(built["master"]))
    assert [c["source"] for c in found["q1"].cells] == ["mine"]
    assert [c["source"] for c in found["q3"].cells] == ["plot()"]


def test_an_answer_moved_out_of_its_region_leaves_it_blank(built):
    nb = submit(built["student"], q1="mine", q3="plot()")
    cell = answer_cells(nb)[0]
    nb["cells"].remove(cell)
    nb["cells"].append(cell)
    found = answers(dump(nb), from_master(built["master"]))
    assert found["q1"].found and found["q1"].blank and found["q1"].cells == ()


def test_a_region_without_its_end_is_bounded(built):
    nb = submit(built["student"], q1="mine", q3="plot()")
    nb["cells"] = [c for c in nb["cells"] if not source(c).startswith("<!-- END QUESTION -->")]
    nb["cells"] += [code(f"x{n} = {n}") for n in range(300)]
    found = answers(dump(nb), from_master(built["master"]))
    assert len(found["q3"].cells) == MAX_REGION_CELLS and found["q3"].omitted_cells == 300 + 1 - MAX_REGION_CELLS
    assert found["q3"].cells[0]["source"] == "plot()"
    assert found["q1"].cells[0]["source"] == "mine" and len(found["q1"].cells) < MAX_REGION_CELLS


def test_random_edits_never_crash(built):
    questions = from_master(built["master"])
    base = submit(built["student"], q1="mine", q3="plot()")
    rng = random.Random(20261203)
    for _ in range(300):
        cells = copy.deepcopy(base["cells"])
        for _ in range(rng.randint(1, 6)):
            i = rng.randrange(len(cells))
            edit = rng.choice(["delete", "duplicate", "move", "garble"])
            if edit == "delete" and len(cells) > 1:
                del cells[i]
            elif edit == "duplicate":
                cells.insert(rng.randrange(len(cells) + 1), copy.deepcopy(cells[i]))
            elif edit == "move":
                cells.insert(rng.randrange(len(cells)), cells.pop(i))
            else:
                cells[i] = rng.choice([{}, {"cell_type": "markdown", "source": 7}, {"cell_type": "code"}, None,
                                       {"cell_type": "markdown", "source": "<!-- BEGIN QUESTION -->"}])  # fmt: skip
        found = answers(dump({**base, "cells": cells}), questions)
        assert set(found) == {"q1", "q3"}
        assert all(len(a.cells) <= MAX_REGION_CELLS and (a.found or not a.blank) for a in found.values())


def test_outputs_and_texts_are_kept_bounded(built):
    huge = "y" * (3 << 20)
    stream = {"output_type": "stream", "name": "stdout", "text": "s"}
    outputs = [image_output(b"\x89PNG" + b"\0" * (6 << 20)), {**stream, "text": huge}] + [stream] * 59
    nb = submit(built["student"], q1="x" * (2 << 20), q3=huge, q3_outputs=outputs)
    found = answers(dump(nb), from_master(built["master"]))
    [q1], [q3] = found["q1"].cells, found["q3"].cells
    assert len(q1["source"]) == 1 << 20 and q1["omitted"] == {"source": 1 << 20}
    assert len(q3["source"]) == 1 << 20 and q3["omitted"] == {"source": 2 << 20, "outputs": 11}
    assert q3["outputs"][0]["data"]["image/png"] == "" and q3["outputs"][0]["omitted"]["image/png"] > 6 << 20
    assert len(q3["outputs"]) == 50 and q3["outputs"][1] == {**stream, "text": huge[: 1 << 20],
                                                             "omitted": {"text": 2 << 20}}  # fmt: skip


# --- refusals ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("read", [from_master, from_handout, lambda data: answers(data, [])])
def test_a_notebook_over_the_json_bounds_is_refused(read):
    nested = b'{"cells": [], "x": [' + b"[]," * (SHAPE.containers + 1) + b"[]]}"
    with pytest.raises(WrittenError, match="lists and objects"):
        read(nested)
    oversized = b'{"cells": [], "x": "' + b"a" * (SHAPE.size + 1) + b'"}'
    with pytest.raises(WrittenError, match="more than 64 MB"):
        read(oversized)


@pytest.mark.parametrize("data", [b"", b"not json", b"[1, 2]", b'{"cells": 3}', b"\xff\xfe"])
def test_what_is_not_a_notebook_is_refused(data):
    with pytest.raises(WrittenError):
        answers(data, [])


# --- stored questions ----------------------------------------------------------------------------------------


def test_a_question_goes_to_the_database_and_back(built):
    for question in from_master(built["master"]):
        stored = json.loads(json.dumps(question.to_dict()))
        assert WrittenQuestion.from_dict(stored) == question


@pytest.mark.parametrize(
    "change",
    [
        {"name": ""},
        {"name": 7},
        {"name": "x" * 101},
        {"points": "2"},
        {"points": True},
        {"points": -1},
        {"prompt": None},
        {"prompt": "x" * 20_001},
        {"rubric": "good"},
        {"rubric": [{"points": "1", "text": "t"}]},
        {"rubric": [{"points": 1, "text": 3}]},
        {"rubric": [{"points": 1}]},
        {"extra": 1},
    ],
)
def test_a_stored_question_is_checked_again(change):
    stored = {"name": "q1", "points": 2.0, "prompt": "Why?", "rubric": [{"points": 1.0, "text": "Because"}]}
    with pytest.raises(WrittenError):
        WrittenQuestion.from_dict({**stored, **change})
    with pytest.raises(WrittenError):
        WrittenQuestion.from_dict([stored])
