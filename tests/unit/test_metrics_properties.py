"""Property tests: pass@k is monotone in k and in c; pass^k <= pass@k; both are probabilities."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from benchflow.scoring import pass_at_k, pass_hat_k


@st.composite
def nck(draw):
    n = draw(st.integers(min_value=1, max_value=60))
    c = draw(st.integers(min_value=0, max_value=n))
    k = draw(st.integers(min_value=1, max_value=n))
    return n, c, k


@settings(max_examples=400)
@given(nck())
def test_bounds_and_order(args):
    n, c, k = args
    at, hat = pass_at_k(n, c, k), pass_hat_k(n, c, k)
    assert 0.0 <= hat <= at <= 1.0


@settings(max_examples=400)
@given(nck())
def test_pass_at_k_monotone_in_k(args):
    n, c, k = args
    if k < n:
        assert pass_at_k(n, c, k + 1) >= pass_at_k(n, c, k)
        assert pass_hat_k(n, c, k + 1) <= pass_hat_k(n, c, k)


@settings(max_examples=400)
@given(nck())
def test_pass_at_k_monotone_in_c(args):
    n, c, k = args
    if c < n:
        assert pass_at_k(n, c + 1, k) >= pass_at_k(n, c, k)
        assert pass_hat_k(n, c + 1, k) >= pass_hat_k(n, c, k)


@settings(max_examples=400)
@given(nck())
def test_k_equal_one_is_the_success_fraction(args):
    n, c, _ = args
    assert abs(pass_at_k(n, c, 1) - c / n) < 1e-12
    assert abs(pass_hat_k(n, c, 1) - c / n) < 1e-12
