"""The trusted evaluator (``python -m runners.oracle``): inputs, checks, the clock; never the user's code."""
