"""Paired tests between runs and intervals over seeds (hseval.reporting.significance), against references
computed here without scipy: McNemar's exact p from the binomial distribution (math.comb), the
bootstrap against resampling indices by brute force, t intervals from printed t-table values."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hseval.io.results import load_evaluation
from hseval.reporting.significance import (
    against_baseline,
    compare_groups,
    compare_runs,
    correctness,
    format_p,
    holm,
    mcnemar_exact,
    not_paired,
    paired_bootstrap,
    paired_difference,
    seed_groups,
    seed_interval,
)
from hseval.reporting.summary import level_table
from tests.helpers import examples


def binomial_two_sided(only_a: int, only_b: int) -> float:
    """Exact McNemar: twice the smaller binomial tail at 1/2, capped at 1."""
    n = only_a + only_b
    if n == 0:
        return 1.0
    k = min(only_a, only_b)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n
    return min(1.0, 2 * tail)


@pytest.mark.parametrize("only_a, only_b", [(0, 0), (5, 0), (0, 5), (3, 9), (10, 10), (17, 30), (1, 40)])
def test_mcnemar_exact_is_the_binomial_test(only_a, only_b):
    assert mcnemar_exact(only_a, only_b) == pytest.approx(binomial_two_sided(only_a, only_b), rel=1e-9)


@given(st.integers(0, 60), st.integers(0, 60))
@settings(max_examples=examples(60), deadline=None)
def test_mcnemar_is_symmetric_and_a_probability(only_a, only_b):
    p = mcnemar_exact(only_a, only_b)
    assert 0 < p <= 1 and p == pytest.approx(mcnemar_exact(only_b, only_a))
    assert p == pytest.approx(binomial_two_sided(only_a, only_b), rel=1e-9)


def test_mcnemar_agrees_with_scipys_binomial_test_on_large_counts():
    from scipy.stats import binomtest

    for only_a, only_b in [(480, 530), (1000, 1100), (7, 2500)]:
        assert mcnemar_exact(only_a, only_b) == pytest.approx(binomtest(only_a, only_a + only_b, 0.5).pvalue,
                                                              rel=1e-9, abs=1e-300)


def test_mcnemar_refuses_negative_counts():
    with pytest.raises(ValueError, match="discordant counts must be >= 0"):
        mcnemar_exact(-1, 3)


def test_paired_bootstrap_matches_resampling_the_samples():
    """Drawing multinomial counts of the three kinds of sample has the distribution of resampling
    sample indices with replacement: the two intervals agree to Monte-Carlo precision."""
    rng = np.random.default_rng(1)
    n = 400
    a = rng.random(n) < 0.80
    b = np.where(rng.random(n) < 0.85, a, ~a)  # agrees with a on ~85 % of the samples
    d = paired_difference(a, b, resamples=20_000, seed=3)
    picks = rng.integers(0, n, size=(20_000, n))
    brute = (a[picks].mean(axis=1) - b[picks].mean(axis=1))
    low, high = np.quantile(brute, [0.025, 0.975])
    assert d.low == pytest.approx(low, abs=0.004) and d.high == pytest.approx(high, abs=0.004)
    assert d.low <= d.delta <= d.high
    assert d.delta == pytest.approx(a.mean() - b.mean())
    assert (d.only_a, d.only_b) == (int((a & ~b).sum()), int((b & ~a).sum()))


def test_identical_runs_have_no_difference():
    a = np.array([True, False, True, True])
    d = paired_difference(a, a)
    assert (d.delta, d.low, d.high, d.p_value) == (0.0, 0.0, 0.0, 1.0)
    assert d.text() == "+0.0000 [+0.0000, +0.0000], p = 1.00"


def test_bootstrap_interval_narrows_with_more_samples():
    wide = paired_bootstrap(20, 10, 200)
    narrow = paired_bootstrap(200, 100, 2000)
    assert narrow[1] - narrow[0] < wide[1] - wide[0]
    assert all(math.isnan(v) for v in paired_bootstrap(0, 0, 0))  # no samples, no interval


def test_mismatched_correctness_is_refused():
    with pytest.raises(ValueError, match="1-d and of one length"):
        paired_difference(np.ones(3, bool), np.ones(4, bool))


@pytest.mark.parametrize("p, text", [(0.5, "0.50"), (0.012, "0.01"), (0.0042, "0.0042"), (3e-7, "< 0.0001"),
                                     (math.nan, "–")])
def test_p_values_read_as_people_write_them(p, text):
    assert format_p(p) == text


def test_correctness_reproduces_every_stored_accuracy(evaluated):
    """The per-sample arrays are the ones the metrics count: their means are level_table's values."""
    runs = load_evaluation(evaluated).runs
    table = level_table(runs).set_index("run")
    for run in runs:
        correct = correctness(run)
        stored = table.loc[run.name].drop("head").dropna()
        assert set(correct) == set(stored.index), run.name
        for metric, value in stored.items():
            assert correct[metric].mean() == pytest.approx(value, abs=1e-12), (run.name, metric)


def test_compare_runs_on_the_same_samples(evaluated):
    runs = {r.name: r for r in load_evaluation(evaluated).runs}
    frame = compare_runs(runs["multitask"], runs["plain"], resamples=2000)
    assert frame["metric"].iloc[0] == "leaf"
    assert "level 1 (own scores)" not in set(frame["metric"])  # plain has no level scores
    assert "level 1 (from leaf)" in set(frame["metric"])
    assert np.allclose(frame["delta"], frame["a"] - frame["b"])
    assert ((frame["low"] <= frame["delta"] + 1e-12) & (frame["delta"] <= frame["high"] + 1e-12)).all()
    assert frame["p_value"].between(0, 1).all()
    together, _ = against_baseline(list(runs.values()), runs["plain"],
                                   compare=lambda a, b: compare_runs(a, b, resamples=500))
    assert "plain" not in set(together["run"])
    leaf = together[(together["run"] == "multitask") & (together["metric"] == "leaf")]
    assert leaf["delta"].iloc[0] == pytest.approx(frame["delta"].iloc[0])


def test_runs_on_different_samples_are_not_paired(evaluated):
    runs = {r.name: r for r in load_evaluation(evaluated).runs}
    other = dataclasses.replace(runs["plain"], name="other", targets=runs["plain"].targets[:-1],
                                topk=runs["plain"].topk[:-1])
    assert "not evaluated on the same samples" in not_paired(runs["riemann"], other)
    with pytest.raises(ValueError, match="not evaluated on the same samples"):
        compare_runs(runs["riemann"], other)
    assert "not evaluated on the same samples" in against_baseline([other], runs["riemann"])[1]["other"]


def test_seed_interval_is_the_t_interval():
    # t(0.975, 2) = 4.302652729911275 (t table)
    stats = seed_interval([0.80, 0.82, 0.84])
    half = 4.302652729911275 * 0.02 / math.sqrt(3)
    assert stats["mean"] == pytest.approx(0.82) and stats["std"] == pytest.approx(0.02)
    assert (stats["low"], stats["high"]) == (pytest.approx(0.82 - half), pytest.approx(0.82 + half))
    one = seed_interval([0.5])
    assert one["mean"] == 0.5 and one["seeds"] == 1 and math.isnan(one["low"])


def _with_seed(run, name, seed, top1=None):
    metrics = {**run.metrics, "seed": seed, "run": name}
    if top1 is not None:
        metrics["top1"] = top1
    return dataclasses.replace(run, name=name, metrics=metrics)


def test_seed_groups_gather_runs_that_differ_only_by_seed(evaluated):
    runs = {r.name: r for r in load_evaluation(evaluated).runs}
    many = [_with_seed(runs["plain"], f"plain-s{s}", s) for s in range(3)] + \
        [_with_seed(runs["riemann"], f"riemann-s{s}", s) for s in range(2)] + [runs["multitask"]]
    groups = seed_groups(many)
    assert [(g.name, len(g.runs)) for g in groups] == [("plain ×3", 3), ("riemann ×2", 2), ("multitask", 1)]
    assert groups[0].seeds == [0, 1, 2]
    # a seed's mark is cut from the common name, never a head's last letter (it read "soft-label ×2")
    named = {"soft-labels": ["soft-labels", "soft-labels-2"], "plain": ["plain-seed0", "plain-seed1"],
             "nbdt": ["nbdt_s1", "nbdt_s2"], "hxe": ["hxe-0", "hxe-1"]}
    for expected, names in named.items():
        group = seed_groups([_with_seed(runs["plain"], name, s) for s, name in enumerate(names)])[0]
        assert group.name == f"{expected} ×2"


def test_compare_groups_pairs_by_seed(evaluated):
    """Same seeds: the paired t interval of the per-seed differences (t(0.975, 2) from the table)."""
    runs = {r.name: r for r in load_evaluation(evaluated).runs}
    a = [_with_seed(runs["plain"], f"a-{s}", s, top1) for s, top1 in zip(range(3), [0.80, 0.83, 0.86])]
    b = [_with_seed(runs["riemann"], f"b-{s}", s, top1) for s, top1 in zip(range(3), [0.79, 0.81, 0.83])]
    groups = seed_groups(a + b)
    table = level_table(a + b)
    frame = compare_groups(groups[0], groups[1], table).set_index("metric")
    leaf = frame.loc["leaf"]
    diffs = np.array([0.01, 0.02, 0.03])
    half = 4.302652729911275 * diffs.std(ddof=1) / math.sqrt(3)
    assert leaf["test"] == "paired t over seeds"
    assert leaf["delta"] == pytest.approx(0.02)
    assert (leaf["low"], leaf["high"]) == (pytest.approx(0.02 - half), pytest.approx(0.02 + half))
    assert leaf["a_std"] == pytest.approx(0.03)
    welch = compare_groups(groups[0], seed_groups(b[:2])[0], level_table(a + b[:2]))
    assert welch.set_index("metric").loc["leaf", "test"] == "Welch t over seeds"


def test_group_levels_give_mean_and_std(evaluated):
    from hseval.reporting.significance import group_levels
    from hseval.reporting.summary import level_long

    runs = {r.name: r for r in load_evaluation(evaluated).runs}
    a = [_with_seed(runs["plain"], f"a-{s}", s, top1) for s, top1 in zip(range(3), [0.80, 0.83, 0.86])]
    frame = group_levels(seed_groups(a), level_long(a))
    leaf = frame[frame["level"] == "leaf"].iloc[0]
    assert leaf["run"] == "a ×3" and leaf["seeds"] == 3
    assert (leaf["accuracy"], leaf["std"]) == (pytest.approx(0.83), pytest.approx(0.03))
    assert isinstance(frame, pd.DataFrame) and (frame["low"] <= frame["accuracy"]).all()


# 25 examples: statsmodels takes ~60 ms a call on the reference machine (100 examples took a minute)
@settings(max_examples=examples(25), deadline=None)
@given(st.lists(st.one_of(st.floats(0, 1), st.just(float("nan"))), max_size=40))
def test_holm_equals_statsmodels_and_leaves_tests_not_made_out(p_values):
    from statsmodels.stats.multitest import multipletests

    p = np.array(p_values, dtype=float)
    adjusted = holm(p)
    made = ~np.isnan(p)
    assert np.isnan(adjusted[~made]).all()
    if made.any():
        expected = multipletests(p[made], method="holm")[1]
        np.testing.assert_allclose(adjusted[made], expected, rtol=1e-12, atol=1e-15)
        assert (adjusted[made] >= p[made]).all()


def test_significance_csv_holds_holm_over_every_test_of_the_report(evaluated, tmp_path):
    """The real report's family: every run against the baseline at every level, both ways; its Holm
    column is statsmodels' Holm of its McNemar column, and the forest plot fills a dot by it."""
    from statsmodels.stats.multitest import multipletests

    from hseval.reporting.report import write_report
    from tests.dashboard_helpers import copy_runs

    folder = copy_runs(evaluated, tmp_path / "eval")
    write_report(folder)
    table = pd.read_csv(folder / "significance.csv")
    tests = table[table["note"].isna()]
    assert len(tests) >= 3 * (len(tests["run"].unique())) and {"Holm p", "p"} <= set(table.columns)
    np.testing.assert_allclose(tests["Holm p"], multipletests(tests["p"], method="holm")[1], rtol=1e-12)
    assert "Holm p" in (folder / "report.md").read_text()
