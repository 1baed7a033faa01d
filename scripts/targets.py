"""The targets the chapters set themselves, kept in one file (results/targets.json), and how a published
figure is read against one: met, missed (by how much) or within noise.

A target is met "within noise" when it is met by less than the run's own spread between repetitions of
the rows the figure divides: the relative range (max - min) / median of each row's repetitions, summed
over the figure's numerator and denominator (a row timed by one `ladder::time_gpu` call, or a PyTorch
anchor, has no repetitions and adds nothing; a figure none of whose rows has repetitions has no spread,
and is met or missed as it reads). scripts/results.py and 12_fa3_hopper/step_table.py both read the goals
here and judge with judge().
"""
import json
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1]
PATH = ROOT / "results" / "targets.json"


def load(path=PATH):
    """The targets: a list of {chapter, key, level, goal, direction, compares, ...}."""
    return json.loads(pathlib.Path(path).read_text())["targets"]


def find(targets, chapter, key, level="target"):
    """The target of that chapter, key and level ("target", "moonshot"), or None."""
    return next((t for t in targets if t["chapter"] == chapter and t["key"] == key and
                 t.get("level", "target") == level), None)


def number(x):
    """A margin or a figure as the tables print it: as many decimals as it needs to show."""
    a = abs(x)
    return f"{x:.1f}" if a >= 10 else f"{x:.3f}" if a >= 0.001 or a == 0 else f"{x:.4f}"


def percent(x):
    """A spread or a relative margin: one decimal, two below 0.1%."""
    return f"{x:.1%}" if abs(x) >= 0.001 or x == 0 else f"{x:.2%}"


def goal_text(goal):
    """A goal as the chapters write it: 0.9, 1.0, 1.35, 900."""
    return f"{goal:g}" if goal >= 10 or goal != round(goal, 1) else f"{goal:.1f}"


def relative_range(values):
    """(max - min) / median of a row's repetitions; None with fewer than two."""
    values = sorted(v for v in values if v is not None)
    if len(values) < 2:
        return None
    mid = len(values) // 2
    median = values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2
    return (values[-1] - values[0]) / median if median else None


def spread_of(*ranges):
    """A figure's spread: the sum of its rows' relative ranges, None when none of them has repetitions."""
    known = [r for r in ranges if r is not None]
    return sum(known) if known else None


def sign(direction):
    return {">=": "≥", "<=": "≤"}[direction]


def judge(value, goal, direction, spread=None):
    """(status, text): status "met", "missed" or "within noise"; text says by how much."""
    margin = value - goal if direction == ">=" else goal - value
    if margin < 0:
        return "missed", f"missed by {number(-margin)} ({percent(-margin / abs(goal))})"
    if spread is not None and margin / abs(goal) < spread:
        return "within noise", (f"within noise: met by {number(margin)}, inside the {percent(spread)} spread "
                                "between repetitions")
    return "met", f"met by {number(margin)}"
