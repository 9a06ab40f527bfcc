"""Side-by-side benchmark: stock `otter run` against our sandboxed grader on the same submissions.

Run with `make bench`. Submissions: the reference solution, the unanswered student notebook and every
correct and wrong corpus entry, as whole notebooks. Reports median and p95 latency per submission,
throughput with 2 parallel jobs, peak memory per grading, the ratio, and per-question parity over all.
"""

from __future__ import annotations

import statistics
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat

from autograder import GradeOptions, grade_submission
from tests.submissions import AUTOGRADER_ZIP, OtterRun, corpus, submission_notebook

STOCK_LATENCY_SAMPLE = 8  # sequential `otter run`s timed one by one (about 3 s each)
OUR_ROUNDS = 3  # times our grader goes over all submissions
JOBS = 2


def submissions() -> dict[str, bytes]:
    notebooks = {"reference": submission_notebook(), "unanswered": submission_notebook(answered=False)}
    notebooks |= {e.name: submission_notebook(e) for kind in ("correct", "wrong") for e in corpus(kind)}
    return {name: nbformat.writes(nb).encode() for name, nb in notebooks.items()}


class PeakMemory:
    """Samples /proc every 2 ms; keeps the largest resident size seen for the chosen processes."""

    def __init__(self, select) -> None:
        self.select, self.peak_kib, self._stop = select, 0, threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def __enter__(self) -> PeakMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def _poll(self) -> None:
        while not self._stop.is_set():
            self.peak_kib = max(self.peak_kib, self.select(_process_table()))
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


def sandbox_hwm_kib(table: dict[int, dict[str, str]], base_uid: int = GradeOptions().sandbox_uid) -> int:
    """Largest high-water mark of any process running as a sandbox uid (the student's process)."""
    peaks = [
        int(f["VmHWM"].split()[0])
        for f in table.values()
        if "VmHWM" in f and base_uid <= int(f["Uid"].split()[0]) < base_uid + 64
    ]
    return max(peaks, default=0)


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def stock_otter(subs: dict[str, bytes], workdir: Path) -> dict:
    latencies, peaks = [], []
    for name in list(subs)[:STOCK_LATENCY_SAMPLE]:
        started = time.perf_counter()
        run = OtterRun(nbformat.reads(subs[name], as_version=4), workdir / f"seq-{name}")
        with PeakMemory(lambda table, pid=run.process.pid: tree_rss_kib(pid, table)) as memory:
            run.scores()
        latencies.append(time.perf_counter() - started)
        peaks.append(memory.peak_kib)
    started = time.perf_counter()
    scores = {}
    names = list(subs)
    for i in range(0, len(names), JOBS):
        batch = {n: OtterRun(nbformat.reads(subs[n], as_version=4), workdir / f"par-{n}") for n in names[i : i + JOBS]}
        scores |= {n: run.scores() for n, run in batch.items()}
    throughput = len(names) / (time.perf_counter() - started)
    return {"latencies": latencies, "peak_kib": max(peaks), "throughput": throughput, "scores": scores}


def our_grader(subs: dict[str, bytes]) -> dict:
    grade = lambda data: grade_submission(AUTOGRADER_ZIP, data)  # noqa: E731
    grade(subs["reference"])  # warm the zip cache and imports, as a long-running service would be
    latencies = []
    with PeakMemory(sandbox_hwm_kib) as memory:
        for _ in range(OUR_ROUNDS):
            for data in subs.values():
                started = time.perf_counter()
                grade(data)
                latencies.append(time.perf_counter() - started)
    started = time.perf_counter()
    with ThreadPoolExecutor(JOBS) as pool:
        results = list(pool.map(grade, list(subs.values()) * OUR_ROUNDS))
    throughput = len(results) / (time.perf_counter() - started)
    scores = {name: {q.name: q.score for q in r.questions} for name, r in zip(subs, results, strict=False)}
    return {"latencies": latencies, "peak_kib": memory.peak_kib, "throughput": throughput, "scores": scores}


def main() -> None:
    subs = submissions()
    print(f"{len(subs)} submissions of the Decode assignment; {JOBS} parallel jobs for throughput\n")
    with tempfile.TemporaryDirectory(prefix="bench-otter-") as workdir:
        stock = stock_otter(subs, Path(workdir))
    ours = our_grader(subs)
    rows = [("stock otter run", stock), ("decode-grader", ours)]
    print(f"{'grader':<16} {'runs':>5} {'median s':>9} {'p95 s':>8} {'subs/s x2':>10} {'peak MB':>8}")
    for label, r in rows:
        lat = r["latencies"]
        print(
            f"{label:<16} {len(lat):>5} {statistics.median(lat):>9.3f} {percentile(lat, 0.95):>8.3f} "
            f"{r['throughput']:>10.2f} {r['peak_kib'] / 1024:>8.1f}"
        )
    speedup = statistics.median(stock["latencies"]) / statistics.median(ours["latencies"])
    print(f"\nmedian latency ratio (stock / ours): {speedup:.1f}x")
    print(f"throughput ratio (ours / stock): {ours['throughput'] / stock['throughput']:.1f}x")
    print("peak memory: stock = otter run's whole process tree (RSS); ours = the sandboxed student process (HWM)")
    mismatches = [n for n in subs if stock["scores"][n] != ours["scores"][n]]
    print(f"per-question parity with stock otter run: {len(subs) - len(mismatches)}/{len(subs)} submissions equal")
    for name in mismatches:
        print(f"  MISMATCH {name}: stock {stock['scores'][name]} ours {ours['scores'][name]}")


if __name__ == "__main__":
    main()
