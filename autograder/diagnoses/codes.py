"""The diagnosis codes (CONTRACT section 3), in the contract's order, with what each means.

`unsupported-type` comes from the sandbox (a value that cannot cross back as plain data) and
`stateful` from the grader (a second call with the same inputs answers differently); both are
codes added beside the contract's, none of which is renamed. So are `raw-score-gradient`,
`imprecise-gradient` and `missing-module`, which CONTRACT section 3 now lists.
"""

CODES: dict[str, str] = {
    "no-scaling": "the 1/sqrt(d_k) factor is missing",
    "wrong-scale": "scaled, but by the wrong factor (d_k, sqrt(d_v), ...)",
    "not-normalized": "weights do not sum to 1",
    "softmax-axis": "normalised over the wrong axis (queries instead of keys)",
    "unstable-softmax": "overflows or returns NaN/inf for large scores (no max subtraction)",
    "wrong-key": "reported the smaller key's weight instead of the larger one's",
    "wrong-gradient": "the softmax derivative is wrong",
    "raw-score-gradient": "the scaled gradient taken with respect to the raw score, not the "
                          "scaled score that goes into the softmax",
    "imprecise-gradient": "the derivative is only approximately right (a finite difference "
                          "with a large step, or computed from a rounded weight)",
    "mask-ignored": "the mask has no effect",
    "mask-inverted": 'True treated as "keep"',
    "mask-after-softmax": "masked weights zeroed after softmax without renormalising",
    "mask-zero-fill": "masked scores set to 0 instead of a large negative number",
    "mask-none-broken": "wrong or crashing when mask=None",
    "transposed": "keys/queries multiplied in the wrong orientation",
    "wrong-shape": "an output has the wrong shape",
    "returns-swapped": "returns (attn, out) instead of (out, attn)",
    "mutates-input": "modifies Q, K, V or mask in place",
    "stateful": "answers differently when called again with the same inputs",
    "causal-diagonal": "causal_mask also masks the diagonal",
    "causal-wrong-triangle": "causal_mask masks the past instead of the future",
    "missing-name": "a required name is not defined",
    "syntax-error": "the submission does not parse",
    "crashed": "the code raised an exception or its process died",
    "timeout": "the code ran past its time limit",
    "memory-limit": "the code ran past its memory limit",
    "forbidden-import": "the submission tried to import the reference or the grader",
    "missing-module": "the code needs a module the grader does not have (it has numpy and "
                      "matplotlib only)",
    "unsupported-type": "a value that cannot be graded as numbers (custom object, subclass...)",
}


def ordered(codes) -> list[str]:
    """Codes in the contract's order, each once; unknown codes last, sorted."""
    codes = set(codes)
    return [c for c in CODES if c in codes] + sorted(codes - CODES.keys())
