"""What a prediction file's scores are (logits or probabilities) is said by the file (a .npz's
``logits``/``probs``, a CSV's ``logit_<i>``/``prob_<i>`` columns) or by ``--scores`` for ``score_<i>``
columns, never guessed from the values; the values are checked against what is said, with the one
tolerance the .npz and CSV readers share."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.special import softmax

from hseval.cli.main import main
from hseval.core.errors import DataError
from hseval.io.prediction_format import PROBABILITY_TOLERANCE
from hseval.tree import write_hierarchy
from tests.helpers import examples, fashion_tree, read_checked


def _csv(path, prefix: str, targets: np.ndarray, scores: np.ndarray, decimals: int | None = None):
    header = "target," + ",".join(f"{prefix}_{i}" for i in range(scores.shape[1]))
    cells = [",".join(f"{v:.{decimals}f}" if decimals is not None else repr(float(v)) for v in row) for row in scores]
    path.write_text(header + "\n" + "".join(f"{t},{row}\n" for t, row in zip(targets, cells)))
    return path


def _softmax_outputs(n: int = 400, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    targets = rng.integers(0, 10, n)
    logits = rng.normal(size=(n, 10)) * 2 + 3 * np.eye(10)[targets]
    return targets, softmax(logits, axis=1)


def _evaluate(tmp_path, file, *extra: str) -> dict:
    tree = tmp_path / "tree.txt"
    write_hierarchy(fashion_tree(), tree, format="pairs")
    out = tmp_path / "ev"
    assert main(["evaluate", "--predictions", str(file), "--hierarchy", str(tree), "--projections", "none",
                 "--out", str(out), *extra]) == 0
    return json.loads((out / file.stem / "metrics.json").read_text())


def test_rounded_softmax_scores_are_the_probabilities_the_file_declares(tmp_path, capsys):
    """The issue's case: softmax scores rounded to 4 decimals in score_<i> columns used to be read
    as logits (wrong cross-entropy and ECE). Undeclared they are refused; declared, by --scores or
    by prob_<i> columns, they give the metrics of the exact probabilities in a .npz."""
    targets, probs = _softmax_outputs()
    np.savez(tmp_path / "exact.npz", targets=targets, probs=probs)
    exact = _evaluate(tmp_path, tmp_path / "exact.npz")
    rounded = _csv(tmp_path / "rounded.csv", "score", targets, probs, decimals=4)
    tree = tmp_path / "tree.txt"
    capsys.readouterr()
    assert main(["evaluate", "--predictions", str(rounded), "--hierarchy", str(tree), "--out",
                 str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "score_<i> columns do not say whether they hold logits or probabilities" \
        in err and "--scores" in err, err
    assert not (tmp_path / "x").exists()
    named = _csv(tmp_path / "named.csv", "prob", targets, probs, decimals=4)
    for file, extra in ((rounded, ["--scores", "probs"]), (named, [])):
        got = _evaluate(tmp_path, file, *extra)
        assert got["cross_entropy"] == pytest.approx(exact["cross_entropy"], abs=2e-3)
        assert got["ece"] == pytest.approx(exact["ece"], abs=2e-3)
        assert got["top1"] == exact["top1"]
        assert got["source"]["inputs"] == ["targets", "probs"]  # recorded as it was read


@pytest.mark.parametrize(("fmt", "kind"), [("npz", "logits"), ("npz", "probs"), ("csv", "logit"), ("csv", "prob")])
def test_declared_scores_whose_values_say_otherwise_are_refused(tmp_path, fmt, kind):
    """Logits that are probabilities in every row, and probabilities that are not: one line."""
    tree = fashion_tree()
    targets, probs = _softmax_outputs(20)
    values = probs if kind.startswith("logit") else np.log(probs)  # each the other kind
    path = tmp_path / f"p.{fmt}"
    if fmt == "npz":
        np.savez(path, targets=targets, **{kind: values})
    else:
        _csv(path, kind, targets, values)
    expected = r"hold probabilities, not logits" if kind.startswith("logit") else \
        r"holds values outside \[0, 1\], so .* not probabilities"
    with pytest.raises(DataError, match=expected) as caught:
        read_checked(path, tree)
    assert "\n" not in str(caught.value) and str(caught.value).startswith(str(path))


@pytest.mark.parametrize(("fmt", "declared"), [("npz", "logits"), ("csv-prob", "logits"), ("csv-pred", "probs")])
def test_a_declaration_that_contradicts_the_file_is_refused(tmp_path, fmt, declared):
    tree = fashion_tree()
    targets, probs = _softmax_outputs(20)
    path = tmp_path / f"p.{fmt.split('-')[0]}"
    if fmt == "npz":
        np.savez(path, targets=targets, probs=probs)
    elif fmt == "csv-prob":
        _csv(path, "prob", targets, probs)
    else:
        path.write_text("target,pred\n0,1\n2,2\n")
    with pytest.raises(DataError, match=rf"{declared} were declared \(--scores {declared}\)"):
        read_checked(path, tree, scores=declared)
    if fmt != "csv-pred":  # the same declaration as the file's own is no contradiction
        assert read_checked(path, tree, scores="probs").kind == "probs"
    with pytest.raises(ValueError, match=r"scores must be one of"):
        read_checked(path, tree, scores="softmax")


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(offset=st.floats(-3, 3).filter(lambda x: abs(abs(x) - 1) > 1e-3), row=st.integers(0, 7),
       seed=st.integers(0, 100))
def test_npz_and_csv_share_one_tolerance_for_probabilities(tmp_path, offset, row, seed):
    """A row summing to 1 + offset·tolerance is probabilities in both formats exactly when
    |offset| <= 1; declared logits, those same values are refused exactly then."""
    tree = fashion_tree()
    rng = np.random.default_rng(seed)
    targets, probs = rng.integers(0, 10, 8), softmax(rng.normal(size=(8, 10)), axis=1)
    assert probs.max() < 1 / 1.03  # so that the row stays in [0, 1]
    probs[row] *= 1 + offset * PROBABILITY_TOLERANCE
    np.savez(tmp_path / "p.npz", targets=targets, probs=probs)
    np.savez(tmp_path / "l.npz", targets=targets, logits=probs)
    files = [tmp_path / "p.npz", _csv(tmp_path / "p.csv", "prob", targets, probs),
             _csv(tmp_path / "s.csv", "score", targets, probs)]
    logits = [tmp_path / "l.npz", _csv(tmp_path / "l.csv", "logit", targets, probs), tmp_path / "s.csv"]
    accepted = []
    for file in files:
        try:
            accepted.append(read_checked(file, tree, scores="probs").kind == "probs")
        except DataError as exc:
            assert "not probabilities" in str(exc) and (f"row {row} " in str(exc) or f"line {row + 2}:" in str(exc))
            accepted.append(False)
    assert accepted == [abs(offset) < 1] * 3
    for file in logits:
        try:
            read_checked(file, tree, scores="logits")
            refused = False
        except DataError as exc:
            assert "hold probabilities, not logits" in str(exc), str(exc)
            refused = True
        assert refused == (abs(offset) < 1)
