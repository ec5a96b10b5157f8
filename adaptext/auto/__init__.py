"""``adaptext auto``: from a labelled file to the most accurate model that predicts at least
``--min-speed`` texts per second on this machine, within ``--time``, with a report.

``plan``: the candidates (a linear baseline, fast baselines, the transformer teacher, students
distilled from it) and what each costs on the data; ``runner``: trains each as a run directory
under OUT, resumably; ``state``: OUT/auto.json as typed records; ``speed``: the throughput pass
over every finished run and the teacher; ``report``: OUT/report.md, report.html, frontier.png.
"""
from .runner import run_auto

__all__ = ["run_auto"]
