"""Side-by-side benchmark: stock `otter run` against this sandboxed grader, in one run.

Run with `make bench`. Three comparisons and a measurement, reported as medians and ratios (these machines are noisy):

1. Decode: the reference solution, the unanswered notebook and every correct and wrong corpus entry, as
   whole notebooks: median and p95 latency per submission, throughput with 2 parallel jobs, peak memory,
   per-question parity, and the CPU time of our two boxes per submission (the student's sandbox and the
   grading process that runs the tests), start included.
2. A pandas assignment of the parity corpus (gradebook: support files, exception tests taking `pd`):
   its solution, unanswered and broken notebooks, latency and parity.
3. The command line grading one Decode notebook, process start included, against `otter run`'s.
4. Values crossing: a DataFrame of 48 MB (one message) and of 200 MB (split over several) fetched from a real
   sandbox by the grader's side, as a test's name is: median time, MB/s, and the grader side's peak memory.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat

from autograder import GradeOptions, grade_submission
from autograder.options import Limits
from testbed.host import peak_memory_kib, reset_peak_memory, started_sandbox
from testbed.parity import broken_submissions, build, submission
from testbed.submissions import AUTOGRADER_ZIP, SOLUTION_NOTEBOOK, OtterRun, corpus, submission_notebook

STOCK_LATENCY_SAMPLE = 8  # sequential `otter run`s timed one by one (about 3 s each)
OUR_ROUNDS = 3  # times this grader goes over all submissions
CLI_RUNS = 15
JOBS = 2
PANDAS_ASSIGNMENT = "gradebook"
CROSSING_MB = (48, 200)  # under one message's 64 MB, and split over four
CROSSING_RUNS = 5


def decode_submissions() -> dict[str, bytes]:
    notebooks = {"reference": submission_notebook(), "unanswered": submission_notebook(answered=False)}
    notebooks |= {e.name: submission_notebook(e) for kind in ("correct", "wrong") for e in corpus(kind)}
    return {name: nbformat.writes(nb).encode() for name, nb in notebooks.items()}


class PeakMemory:
    """Samples /proc every 2 ms; keeps the largest resident size of a process tree (stock otter run)."""

    def __init__(self, root: int) -> None:
        self.root, self.peak_kib, self._stop = root, 0, threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def __enter__(self) -> PeakMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def _poll(self) -> None:
        while not self._stop.is_set():
            self.peak_kib = max(self.peak_kib, tree_rss_kib(self.root, _process_table()))
            time.sleep(0.002)


def _process_table() -> dict[int, dict[str, str]]:
    table = {}
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            table[int(status.parent.name)] = dict(line.split(":", 1) for line in status.read_text().splitlines())
        except (OSError, ValueError):
            continue
    return table


def tree_rss_kib(root: int, table: dict[int, dict[str, str]]) -> int:
    """Resident size of a process and all its descendants (stock otter: parent + kernel)."""
    children: dict[int, list[int]] = {}
    for pid, fields in table.items():
        children.setdefault(int(fields.get("PPid", "0").split()[0]), []).append(pid)
    total, stack = 0, [root]
    while stack:
        pid = stack.pop()
        total += int(table.get(pid, {}).get("VmRSS", "0 kB").split()[0])
        stack += children.get(pid, [])
    return total


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def stock_otter(subs: dict[str, bytes], workdir: Path, zip_path: Path, filename: str, sample: int) -> dict:
    """Latency of `sample` sequential runs, then every submission two at a time (throughput, scores)."""

    def run(name: str, tag: str) -> OtterRun:
        notebook = nbformat.reads(subs[name], as_version=4)
        return OtterRun(notebook, workdir / f"{tag}-{name}", zip_path, filename=filename, fork=False)

    latencies, peaks = [], []
    for name in list(subs)[:sample]:
        started = time.perf_counter()
        process = run(name, "seq")
        with PeakMemory(process.run.started(timeout=30)) as memory:
            process.scores()
        latencies.append(time.perf_counter() - started)
        peaks.append(memory.peak_kib / 1024)
    started, scores, names = time.perf_counter(), {}, list(subs)
    for i in range(0, len(names), JOBS):
        batch = {n: run(n, "par") for n in names[i : i + JOBS]}
        scores |= {n: process.scores() for n, process in batch.items()}
    throughput = len(names) / (time.perf_counter() - started)
    return {"latencies": latencies, "peak_mb": max(peaks), "throughput": throughput, "scores": scores}


def our_grader(subs: dict[str, bytes], zip_path: Path, rounds: int) -> dict:
    """As a grading service runs it: imports done, sandboxes started ahead (GradeOptions.prestart)."""
    options = GradeOptions(prestart=JOBS)
    grade_submission(zip_path, next(iter(subs.values())), options)
    latencies, peaks, scores, cpu = [], [], {}, {"sandbox": [], "grading process": []}
    for _ in range(rounds):
        for name, data in subs.items():
            started = time.perf_counter()
            result = grade_submission(zip_path, data, options)
            latencies.append(time.perf_counter() - started)
            peaks.append(result.usage["peak_memory_mb"])
            cpu["sandbox"].append(result.usage["cpu_seconds"])
            cpu["grading process"].append(result.usage["tests_cpu_seconds"])
            scores[name] = {q.name: round(q.score, 5) for q in result.questions}
    started = time.perf_counter()
    with ThreadPoolExecutor(JOBS) as pool:
        done = list(pool.map(lambda data: grade_submission(zip_path, data, options), list(subs.values()) * rounds))
    throughput = len(done) / (time.perf_counter() - started)
    return {"latencies": latencies, "peak_mb": max(peaks), "throughput": throughput, "scores": scores, "cpu": cpu}


def report(title: str, stock: dict, ours: dict, names: list[str]) -> None:
    print(f"\n## {title}")
    print(f"{'grader':<16} {'runs':>5} {'median s':>9} {'p95 s':>8} {'subs/s x2':>10} {'peak MB':>8}")
    for label, r in (("stock otter run", stock), ("decode-grader", ours)):
        lat = r["latencies"]
        print(f"{label:<16} {len(lat):>5} {statistics.median(lat):>9.3f} {percentile(lat, 0.95):>8.3f} "
              f"{r['throughput']:>10.2f} {r['peak_mb']:>8.1f}")  # fmt: skip
    ratio = statistics.median(stock["latencies"]) / statistics.median(ours["latencies"])
    print(f"median latency ratio (stock / ours): {ratio:.1f}x")
    cpu = {box: statistics.median(seconds) * 1000 for box, seconds in ours["cpu"].items()}
    print("CPU per submission, median (start included): " + ", ".join(f"{b} {ms:.0f} ms" for b, ms in cpu.items()))
    print(f"throughput ratio (ours / stock): {ours['throughput'] / stock['throughput']:.1f}x")
    stock_scores = {n: {q: round(s, 5) for q, s in stock["scores"][n].items()} for n in names}
    mismatches = [n for n in names if stock_scores[n] != ours["scores"][n]]
    print(f"per-question parity with stock otter run: {len(names) - len(mismatches)}/{len(names)} submissions equal")
    for name in mismatches:
        print(f"  MISMATCH {name}: stock {stock_scores[name]} ours {ours['scores'][name]}")


def command_line(workdir: Path) -> list[float]:
    """Wall time of `python -m autograder grade` on one Decode notebook, process start included."""
    command = [sys.executable, "-m", "autograder", "grade", "--autograder", str(AUTOGRADER_ZIP), str(SOLUTION_NOTEBOOK)]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    times = []
    for _ in range(CLI_RUNS):
        started = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True, env=env, cwd=workdir)
        times.append(time.perf_counter() - started)
    return times


def crossing(sizes_mb: tuple[int, ...], runs: int) -> dict[int, dict[str, float]]:
    """A DataFrame of four float columns of each size, fetched `runs` times from a real sandbox by the grader's
    side (this process): median seconds, MB/s, and the peak resident memory this process reached over what it
    held before (VmHWM, reset before each run): the received bytes and the rebuilt value."""
    results = {}
    with started_sandbox(AUTOGRADER_ZIP, Limits()) as (channel, values):
        for mb in sizes_mb:
            rows = mb * 2**20 // 32  # of four float64 columns
            random = f"np.random.default_rng(0).random(({rows}, 4))"
            source = f"import numpy as np, pandas as pd\ndf = pd.DataFrame({random})"
            channel.request("exec", 60, source=source, name="<bench>")
            seconds, peaks = [], []
            for _ in range(runs):
                reset_peak_memory()
                before = peak_memory_kib()
                started = time.perf_counter()
                frame = values.request("get", name="df")
                seconds.append(time.perf_counter() - started)
                peaks.append((peak_memory_kib() - before) / 1024)
                assert frame.shape == (rows, 4), type(frame)
                del frame
            median = statistics.median(seconds)
            results[mb] = {"seconds": median, "mb_per_s": mb / median, "peak_mb": statistics.median(peaks)}
    return results


def report_crossing(results: dict[int, dict[str, float]]) -> None:
    print(f"\n## values crossing: a DataFrame from the sandbox to the grader's side (median of {CROSSING_RUNS})")
    print(f"{'size MB':>8} {'median s':>9} {'MB/s':>7} {'peak MB':>8}")
    for mb, r in results.items():
        print(f"{mb:>8} {r['seconds']:>9.3f} {r['mb_per_s']:>7.0f} {r['peak_mb']:>8.0f}")


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="bench-") as scratch:
        workdir = Path(scratch)
        decode = decode_submissions()
        print(f"Decode: {len(decode)} submissions; pandas: the parity corpus's {PANDAS_ASSIGNMENT}; {JOBS} jobs")
        stock = stock_otter(decode, workdir / "decode", AUTOGRADER_ZIP, "decode.ipynb", STOCK_LATENCY_SAMPLE)
        report("Decode", stock, our_grader(decode, AUTOGRADER_ZIP, OUR_ROUNDS), list(decode))

        built = build(PANDAS_ASSIGNMENT, workdir / "pandas-build")
        names = ["solution", "unanswered", *broken_submissions(PANDAS_ASSIGNMENT)]
        pandas = {name: nbformat.writes(submission(built, name)).encode() for name in names}
        stock = stock_otter(pandas, workdir / "pandas", built.zip, f"{PANDAS_ASSIGNMENT}.ipynb", len(pandas))
        report(f"pandas ({PANDAS_ASSIGNMENT})", stock, our_grader(pandas, built.zip, OUR_ROUNDS), names)

        stock_decode = statistics.median(stock_otter_cli_reference(decode, workdir))
        ours = command_line(workdir)
        print("\n## the command line on one Decode notebook, process start included")
        median = statistics.median(ours)
        p95 = percentile(ours, 0.95)
        print(f"python -m autograder grade: median {median:.3f} s, p95 {p95:.3f} s ({CLI_RUNS} runs)")
        print(f"otter run: median {stock_decode:.3f} s; ratio {stock_decode / median:.1f}x")

        report_crossing(crossing(CROSSING_MB, CROSSING_RUNS))


def stock_otter_cli_reference(subs: dict[str, bytes], workdir: Path) -> list[float]:
    """`otter run` on the reference notebook, three times (its whole command, as ours)."""
    times = []
    for i in range(3):
        started = time.perf_counter()
        reference = nbformat.reads(subs["reference"], as_version=4)
        OtterRun(reference, workdir / f"cli-{i}", AUTOGRADER_ZIP, fork=False).scores()
        times.append(time.perf_counter() - started)
    return times


if __name__ == "__main__":
    main()
