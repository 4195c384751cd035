"""Means, confidence intervals and quantiles of benchmark samples."""

import math
import statistics
from typing import Dict, List, Optional, Sequence, Tuple

# Two-sided 95% quantiles of Student's t for 1..30 degrees of freedom
# (NIST/SEMATECH e-Handbook of Statistical Methods, table 1.3.6.7.2).
T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262,
        2.228, 2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101,
        2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052,
        2.048, 2.045, 2.042]


def t975(df: int) -> float:
    """Two-sided 95% quantile of Student's t with df degrees of freedom."""
    if df <= len(T975):
        return T975[df - 1]
    # Beyond the table, the expansion of Abramowitz and Stegun 26.7.5.
    z = statistics.NormalDist().inv_cdf(0.975)
    return z + (z ** 3 + z) / (4 * df) + \
        (5 * z ** 5 + 16 * z ** 3 + 3 * z) / (96 * df ** 2)


def mean_ci(samples: Sequence[float]) -> Tuple[float, float]:
    """Mean and half-width of its 95% confidence interval."""
    mean = statistics.fmean(samples)
    if len(samples) < 2:
        return mean, float("nan")
    t = t975(len(samples) - 1)
    return mean, t * statistics.stdev(samples) / len(samples) ** 0.5


def quantile(samples: Sequence[float], q: float) -> float:
    """The q-quantile (0 <= q <= 1) by linear interpolation."""
    ordered = sorted(samples)
    pos = q * (len(ordered) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def round_ratios(mine: Dict[int, float],
                 theirs: Dict[int, float]) -> List[float]:
    """Per-round ratios mine/theirs over the rounds both have, leaving
    out rounds where theirs is 0 (a stressor that made no bogo-op)."""
    return [mine[k] / theirs[k] for k in sorted(mine)
            if k in theirs and theirs[k]]


def ratio_ci(mine: Dict[int, float],
             theirs: Dict[int, float]) -> Optional[Tuple[float, float]]:
    """Mean ± CI of the per-round ratios, or None with no common round."""
    ratios = round_ratios(mine, theirs)
    return mean_ci(ratios) if ratios else None
