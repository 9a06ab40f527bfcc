"""Charts for the dashboard, drawn here as SVG (no CDN, no JavaScript), each with a text alternative."""

from __future__ import annotations

from html import escape

WIDTH, HEIGHT, MARGIN = 560, 220, 36
LABEL_ROOM = 90  # below and right of the axis, for the slanted labels


def score_histogram(scores: list[float], max_score: float, bins: int = 8) -> str:
    """Counts of students' scores in equal bins from 0 to max_score."""
    counts = [0] * bins
    for score in scores:
        counts[min(bins - 1, int(score / max_score * bins)) if max_score else 0] += 1
    labels = [f"{max_score * i / bins:g}–{max_score * (i + 1) / bins:g}" for i in range(bins)]
    summary = ", ".join(f"{count} scored {label}" for label, count in zip(labels, counts, strict=True) if count)
    description = f"Histogram of {len(scores)} students' scores out of {max_score:g}: {summary or 'no scores yet'}."
    return _bars("score-histogram-title", "Scores", description, labels, counts, max(counts, default=0) or 1, "")


def pass_rates(rates: dict[str, float]) -> str:
    """Share of graded students with full marks on each question (0 to 1)."""
    labels = list(rates)
    summary = ", ".join(f"{name} {rate:.0%}" for name, rate in rates.items())
    description = f"Share of students with full marks, by question: {summary or 'no graded attempts yet'}."
    return _bars("pass-rates-title", "Full marks by question", description, labels, list(rates.values()), 1, "%")


def _bars(title_id: str, title: str, description: str, labels: list[str], values: list, top: float, unit: str) -> str:
    n = max(len(labels), 1)
    slot = (WIDTH - 2 * MARGIN) / n
    bars = []
    for i, (label, value) in enumerate(zip(labels, values, strict=True)):
        height = (HEIGHT - 2 * MARGIN) * value / top
        x, y = MARGIN + i * slot + slot * 0.1, HEIGHT - MARGIN - height
        shown = f"{value:.0%}" if unit == "%" else f"{value:g}"
        bars.append(
            f'<rect x="{x:.1f}" y="{y:.1f}" width="{slot * 0.8:.1f}" height="{height:.1f}" class="bar"/>'
            f'<text x="{x + slot * 0.4:.1f}" y="{y - 4:.1f}" class="value">{shown}</text>'
            f'<text x="{x + slot * 0.4:.1f}" y="{HEIGHT - MARGIN + 14}" class="label" '
            f'transform="rotate(20 {x + slot * 0.4:.1f} {HEIGHT - MARGIN + 14})">{escape(label)}</text>'
        )
    return (
        f'<svg role="img" aria-labelledby="{title_id}" viewBox="0 0 {WIDTH + LABEL_ROOM} {HEIGHT + LABEL_ROOM}" '
        f'xmlns="http://www.w3.org/2000/svg" class="chart"><title id="{title_id}">{escape(description)}</title>'
        f'<line x1="{MARGIN}" y1="{HEIGHT - MARGIN}" x2="{WIDTH - MARGIN}" y2="{HEIGHT - MARGIN}" class="axis"/>'
        f"{''.join(bars)}</svg>"
    )
