"""Benchmarks: what scriptorium costs on top of the network, side by side with the bare
``anthropic`` SDK and its peers, measured as ratios in one run. ``python -m bench``; see
``bench/README.md``."""
