"""TEST DOUBLE: the two modules of Prime-RL's SFT trainer that BenchFlow's run-local shim hooks
(``benchflow/train/prime_rl_site.py``), with the names and code shape of Prime-RL's (March-July 2026) and
numpy in place of torch, so the hooks can be checked without a GPU. Used by tests/doubles/fake_prime_rl.py."""
