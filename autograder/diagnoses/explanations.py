"""Which failed tests each diagnosis explains, and what to tell the student instead of the
test's generic hint.

A test's hint guesses at a cause ("did you subtract the row's maximum?"); once a diagnosis
has found the cause, the report says that instead, so that no message contradicts the
diagnosis above it. `EXPLAINS` is also the catalogue of what each misconception may cost:
the corpus checks that every test a mistake fails is explained by a code it was given.
"""

from __future__ import annotations

EX1_ALL = frozenset({"scores", "weights", "output"})
EX2_SOFTMAX = frozenset({"softmax_of_a_vector_matches_reference",
                         "softmax_normalises_each_row_of_a_matrix"})
EX2_WEIGHTS = frozenset({"p_unscaled_is_the_weight_on_the_larger_key",
                         "p_scaled_is_the_weight_on_the_larger_key"})
EX2_GRADIENTS = frozenset({"grad_unscaled_is_the_smaller_keys_own_derivative",
                           "grad_scaled_is_the_smaller_keys_own_derivative"})
EX2_SCALED = frozenset({"p_scaled_is_the_weight_on_the_larger_key",
                        "grad_scaled_is_the_smaller_keys_own_derivative"})
EX3_UNMASKED = frozenset({"attention_weights_without_mask", "attention_output_without_mask"})
EX3_MASKED = frozenset({
    "attention_weights_with_causal_mask", "attention_output_with_causal_mask",
    "attention_weights_with_mask_hiding_largest_scores",
    "attention_output_with_mask_hiding_largest_scores",
})
EX3_VALUES = EX3_UNMASKED | EX3_MASKED
EX3_STABLE = frozenset({"attention_is_stable_at_large_scores"})
EX3_INPUTS = frozenset({"attention_accepts_read_only_inputs",
                        "attention_leaves_its_inputs_unchanged"})

# (exercise, code) -> (the tests it explains, what to say; "" when the test's own message
# already names the problem, as for a wrong shape).
EXPLAINS: dict[tuple[str, str], tuple[frozenset, str]] = {
    ("ex1", "no-scaling"): (EX1_ALL, "your numbers come from unscaled scores: divide each "
                                     "q·k_i by sqrt(d_k) = sqrt(2)"),
    ("ex1", "wrong-scale"): (EX1_ALL, "your numbers come from scores divided by the wrong "
                                      "factor: it is sqrt(d_k) = sqrt(2)"),
    ("ex1", "not-normalized"): (frozenset({"weights", "output"}),
                                "your weights do not sum to 1: divide each exp(s_i) by the "
                                "sum of both"),
    ("ex2", "not-normalized"): (EX2_SOFTMAX | EX2_WEIGHTS,
                                "the weights do not sum to 1: divide the exponentials by "
                                "their sum (a weight lies between 0 and 1)"),
    ("ex2", "softmax-axis"): (EX2_SOFTMAX, "your softmax normalises down the columns: each "
                                           "row (the last axis, axis=-1) must sum to 1"),
    ("ex2", "unstable-softmax"): (frozenset({"softmax_survives_large_scores"}),
                                  "exp overflows above about 709: subtract each row's "
                                  "maximum before calling np.exp"),
    ("ex2", "wrong-key"): (EX2_WEIGHTS, "this is the smaller key's weight: report the "
                                        "weight of the larger key (raw score 8)"),
    ("ex2", "no-scaling"): (EX2_SCALED, "the scaled numbers come from the raw scores: divide "
                                        "both scores by sqrt(d_k) = 8 first"),
    ("ex2", "wrong-scale"): (EX2_SCALED, "the scaled numbers come from scores divided by the "
                                         "wrong factor: it is sqrt(d_k) = 8"),
    ("ex2", "wrong-gradient"): (EX2_GRADIENTS,
                                "differentiate w2 = exp(s2) / (exp(s1) + exp(s2)) with respect "
                                "to s2 and write the result in terms of w2"),
    ("ex2", "raw-score-gradient"): (frozenset({"grad_scaled_is_the_smaller_keys_own_derivative"}),
                                    "this is the derivative with respect to the raw score; "
                                    "take it with respect to the scaled score that goes into "
                                    "the softmax"),
    ("ex2", "imprecise-gradient"): (EX2_GRADIENTS,
                                    "the derivative is only approximately right: compute it "
                                    "exactly from the unrounded weight (a finite difference "
                                    "needs a much smaller step, or a central difference)"),
    ("ex3", "no-scaling"): (EX3_VALUES, "the weights come from unscaled scores: divide Q K^T "
                                        "by sqrt(d_k)"),
    ("ex3", "wrong-scale"): (EX3_VALUES, "the scores are divided by the wrong factor: it is "
                                         "sqrt(d_k), from the queries' and keys' dimension"),
    ("ex3", "softmax-axis"): (EX3_VALUES, "the softmax runs over the queries: normalise each "
                                          "row, over the keys (axis=-1)"),
    ("ex3", "not-normalized"): (EX3_VALUES, "each query's weights must sum to 1 over the "
                                            "keys: divide by each row's sum"),
    ("ex3", "unstable-softmax"): (EX3_STABLE, "exp overflows above about 709: subtract each "
                                              "row's maximum score before exponentiating"),
    ("ex3", "mask-ignored"): (EX3_MASKED, "the mask has no effect: set the scores where it is "
                                          "True to -inf (or a large negative number) before "
                                          "the softmax"),
    ("ex3", "mask-inverted"): (EX3_MASKED, "True in the mask means masked out: your weights "
                                           "keep the masked keys and hide the others"),
    ("ex3", "mask-after-softmax"): (EX3_MASKED, "the masked weights are zeroed after the "
                                                "softmax, so the rows no longer sum to 1: mask "
                                                "the scores before the softmax"),
    ("ex3", "mask-zero-fill"): (EX3_MASKED, "masked scores set to 0 still give those keys "
                                            "weight: set them to -inf or a large negative "
                                            "number such as -1e9"),
    ("ex3", "mask-none-broken"): (EX3_UNMASKED | EX3_STABLE,
                                  "attention goes wrong without a mask: when mask is None, "
                                  "skip the masking step"),
    ("ex3", "transposed"): (EX3_VALUES | EX3_STABLE,
                            "the scores are multiplied the wrong way round: Q K^T is (n, m), "
                            "one row per query and one column per key"),
    ("ex3", "wrong-shape"): (EX3_VALUES, ""),
    ("ex3", "returns-swapped"): (EX3_VALUES, ""),
    ("ex3", "mutates-input"): (EX3_INPUTS, "attention writes into its inputs: compute on new "
                                           "arrays and leave Q, K, V and mask as they were"),
    ("ex3", "stateful"): (frozenset({"attention_answers_each_call_from_its_own_inputs"}),
                          "attention keeps state between calls: each answer must depend only "
                          "on that call's inputs"),
    ("ex3", "causal-diagonal"): (frozenset({"causal_mask_hides_strictly_the_future"}),
                                 "causal_mask also hides the diagonal: a position may attend "
                                 "to itself"),
    ("ex3", "causal-wrong-triangle"): (frozenset({"causal_mask_hides_strictly_the_future"}),
                                       "causal_mask hides the past: True belongs strictly "
                                       "above the diagonal, on the future"),
}


def explained_by(exercise: str, test: str, codes) -> list[str]:
    """The codes among `codes` that explain a failure of `exercise`/`test`, in order."""
    return [code for code in codes if test in EXPLAINS.get((exercise, code), ((), ""))[0]]


def explanation(exercise: str, test: str, codes) -> str:
    """What the diagnoses say about this failed test ("" when none explains it, or when the
    test's own message already names the problem)."""
    texts = [EXPLAINS[(exercise, code)][1] for code in explained_by(exercise, test, codes)]
    return "; ".join(text for text in texts if text)
