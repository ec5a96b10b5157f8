"""The benchmark tables' run helper: a kept run directory is read back when finished and resumed
when its slice was killed, so a time-limited machine loses no finished epoch."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from common import train_cell  # noqa: E402

OPTS = {"model": "kim_cnn", "data": "trec-demo", "seed": 2, "filters": 8, "embed_dim": 16, "max_length": 20,
        "patience": 5, "threads": 1}


@pytest.mark.slow
def test_kept_run_is_read_back_or_resumed(tmp_path):
    whole = train_cell({**OPTS, "epochs": 3}, tmp_path / "whole")
    again = train_cell({**OPTS, "epochs": 3}, tmp_path / "whole")         # finished: read back, not retrained
    assert again == whole

    cut = tmp_path / "cut"
    first = train_cell({**OPTS, "epochs": 1}, cut)
    (cut / "metrics.json").unlink()                                        # as if killed after its first epoch
    cfg = (cut / "config.json").read_text().replace('"epochs": 1', '"epochs": 3')
    (cut / "config.json").write_text(cfg)
    resumed = train_cell({**OPTS, "epochs": 3}, cut)
    assert resumed["info"]["epochs_run"] == 3 and first["info"]["epochs_run"] == 1
    for split in ("dev", "test"):
        assert resumed[split]["accuracy"] == whole[split]["accuracy"]
        assert resumed[split]["confusion_matrix"] == whole[split]["confusion_matrix"]
    assert resumed["info"]["train_seconds"] > first["info"]["train_seconds"]
