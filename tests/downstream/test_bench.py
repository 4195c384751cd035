"""bin/bench: its statistics, and its refusal of bad input."""

import importlib.machinery
import importlib.util

import pytest

from conftest import REPO, run

BENCH = REPO / "bin" / "bench"


def load_bench():
    loader = importlib.machinery.SourceFileLoader("bench", str(BENCH))
    spec = importlib.util.spec_from_loader("bench", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def test_mean_ci_of_a_known_sample():
    # mean 3, s = sqrt(2.5), t(0.975, 4) = 2.776: 2.776 * 1.5811 / sqrt(5)
    mean, half = load_bench().mean_ci([1.0, 2.0, 3.0, 4.0, 5.0])
    assert mean == 3.0
    assert half == pytest.approx(1.9629, abs=1e-4)


def test_mean_ci_uses_the_t_quantile_of_its_sample_size():
    mean, half = load_bench().mean_ci([10.0, 12.0])
    assert (mean, half) == (11.0, pytest.approx(12.706))


@pytest.mark.parametrize("df, quantile", [
    (1, 12.706), (29, 2.045), (30, 2.042), (40, 2.021), (60, 2.000),
    (120, 1.980),
])
def test_t_quantiles_follow_the_table(df, quantile):
    # Values from the NIST/SEMATECH e-Handbook, table 1.3.6.7.2.
    assert load_bench().t975(df) == pytest.approx(quantile, abs=1e-3)


@pytest.mark.parametrize("args, message", [
    (["-n", "1"], "--runs must be at least 2"),
    (["--binary", "x=/nonexistent"], "is not an executable"),
    (["--config", "noequals"], "is not NAME=VALUE"),
    (["--binary", "a=/bin/true", "--guest", "/nonexistent"], "run bin/guest-kernel"),
])
def test_bad_input_is_refused(args, message, tmp_path):
    proc = run([BENCH, "--out", tmp_path / "out", *args])
    assert proc.returncode != 0
    assert message in proc.stderr
    assert not (tmp_path / "out").exists()
