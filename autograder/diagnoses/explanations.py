"""Which failed tests each diagnosis explains, and what to tell the student instead of the
test's generic hint.

A test's hint guesses at a cause ("did you subtract the row's maximum?"); once a diagnosis
has found the cause, the report says that instead, so that no message contradicts the
diagnosis above it. `EXPLAINS` is also the catalogue of what each misconception may cost:
the corpus checks that every test a mistake fails is explained by a code it was given.
What to say names the student's own numbers where it helps (`{ex1_root}`, `{ex2_root}` and
`{ex2_gap}` are filled in from the variant graded: `sqrt(2)`, `8` and `8` for the lesson's).
"""

from __future__ import annotations

from autograder.variants import DEFAULT, Variant, root_text

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
EX4_VALUES = frozenset({"blockwise_matches_attention_without_mask",
                        "blockwise_matches_attention_with_causal_mask",
                        "blockwise_matches_attention_in_float32",
                        "blockwise_matches_attention_for_any_block_size"})
EX4_CAUSAL = frozenset({"blockwise_matches_attention_with_causal_mask"})
# The memory test also compares some of its output rows with the reference: a value mistake
# fails it too, and is explained there as in the value tests.
EX4_MEMORY = frozenset({"blockwise_memory_stays_far_below_one_score_matrix"})
EX3_ROWS_CHECK = frozenset({"rows_sum_to_one_passes_attention_and_fails_broken_rows"})
EX3_FUTURE_CHECK = frozenset({"future_is_zero_passes_causal_attention_and_fails_any_leak"})

_OTHER_VARIANT = ("these are the answers for numbers that are not yours (another student's, or "
                  "the lesson's own): check the student id in the cell Your numbers, then work "
                  "with your own numbers")

# (exercise, code) -> (the tests it explains, what to say; "" when the test's own message
# already names the problem, as for a wrong shape).
EXPLAINS: dict[tuple[str, str], tuple[frozenset, str]] = {
    ("ex1", "no-scaling"): (EX1_ALL, "your numbers come from unscaled scores: divide each "
                                     "q·k_i by sqrt(d_k) = {ex1_root}"),
    ("ex1", "wrong-scale"): (EX1_ALL, "your numbers come from scores divided by the wrong "
                                      "factor: it is sqrt(d_k) = {ex1_root}"),
    ("ex1", "not-normalized"): (frozenset({"weights", "output"}),
                                "your weights do not sum to 1: divide each exp(s_i) by the "
                                "sum of both"),
    ("ex1", "other-variant"): (EX1_ALL, _OTHER_VARIANT),
    ("ex2", "other-variant"): (EX2_WEIGHTS | EX2_GRADIENTS, _OTHER_VARIANT),
    ("ex2", "not-normalized"): (EX2_SOFTMAX | EX2_WEIGHTS,
                                "the weights do not sum to 1: divide the exponentials by "
                                "their sum (a weight lies between 0 and 1)"),
    ("ex2", "softmax-axis"): (EX2_SOFTMAX, "your softmax normalises down the columns: each "
                                           "row (the last axis, axis=-1) must sum to 1"),
    ("ex2", "unstable-softmax"): (frozenset({"softmax_survives_large_scores"}),
                                  "exp overflows above about 709: subtract each row's "
                                  "maximum before calling np.exp"),
    ("ex2", "wrong-key"): (EX2_WEIGHTS, "this is the smaller key's weight: report the "
                                        "weight of the larger key (raw score {ex2_gap})"),
    ("ex2", "no-scaling"): (EX2_SCALED, "the scaled numbers come from the raw scores: divide "
                                        "both scores by sqrt(d_k) = {ex2_root} first"),
    ("ex2", "wrong-scale"): (EX2_SCALED, "the scaled numbers come from scores divided by the "
                                         "wrong factor: it is sqrt(d_k) = {ex2_root}"),
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
                                            "keys: divide by each row's sum, kept as a "
                                            "column (keepdims=True)"),
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
    ("ex3", "mask-zero-fill"): (EX3_MASKED, "masked scores set to 0 (or another small "
                                            "number, such as -1) still give those keys "
                                            "weight: set them to -inf or a large negative "
                                            "number such as -1e9"),
    ("ex3", "mask-none-broken"): (EX3_UNMASKED | EX3_STABLE,
                                  "attention goes wrong without a mask: give mask the "
                                  "default None (mask=None) and, when mask is None, skip the "
                                  "masking step"),
    ("ex3", "transposed"): (EX3_VALUES | EX3_STABLE,
                            "Q K^T is (n, m), one row per query and one column per key: "
                            "multiply that way round, and return attn as it comes, one row "
                            "per query"),
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
    ("ex3", "check-exact-float"): (EX3_ROWS_CHECK,
                                   "a sum of floats is 1 only up to rounding (float32 rows are "
                                   "off by about 1e-7): compare with a tolerance, as "
                                   "np.allclose does, not with == 1"),
    ("ex3", "check-lower-triangle"): (EX3_FUTURE_CHECK,
                                      "the future is above the diagonal (key j after query "
                                      "t, j > t): look at np.triu(attn, k=1), not below the "
                                      "diagonal"),
    ("ex3", "check-diagonal"): (EX3_FUTURE_CHECK,
                                "the diagonal is each query's weight on itself, which is "
                                "allowed: only the weights strictly above it (k=1) must be 0"),
    ("ex4", "no-scaling"): (EX4_VALUES | EX4_MEMORY,
                            "the scores are not scaled: divide Q K^T by sqrt(d_k)"),
    ("ex4", "wrong-scale"): (EX4_VALUES | EX4_MEMORY,
                             "the scores are divided by the wrong factor: it is sqrt(d_k)"),
    ("ex4", "blockwise-no-rescale"): (EX4_VALUES | EX4_MEMORY,
                                      "when the running maximum grows from m to m', multiply "
                                      "both running sums (of the weights and of weights @ V) "
                                      "by exp(m - m') before adding the new block"),
    ("ex4", "blockwise-per-block-normaliser"): (EX4_VALUES | EX4_MEMORY,
                                                "keep the running sums unnormalised and divide "
                                                "by the total of all the weights once, after "
                                                "the last block"),
    ("ex4", "not-normalized"): (EX4_VALUES | EX4_MEMORY,
                                "out is the running weighted sum of the values: divide it by "
                                "the running total of the weights, once, after the last block"),
    ("ex4", "blockwise-causal-off-by-one"): (EX4_CAUSAL | EX4_MEMORY,
                                             "the causal boundary is off by one: query t sees "
                                             "keys 0 to t, itself included, and not key t + 1; "
                                             "check the comparison where a block of keys "
                                             "meets the diagonal"),
    ("ex4", "mask-ignored"): (EX4_CAUSAL | EX4_MEMORY,
                              "with causal=True every key after the query (j > t) must get "
                              "no weight"),
    ("ex4", "unstable-softmax"): (frozenset({"blockwise_is_stable_at_large_scores"}),
                                  "exp overflows above about 709: subtract the running "
                                  "maximum before exponentiating"),
    ("ex4", "blockwise-quadratic-memory"): (EX4_MEMORY, ""),
    ("ex4", "blockwise-keys-not-blocked"): (EX4_MEMORY,
                                            "right values, but the keys are not taken a "
                                            "block at a time: take them `block` at a time, "
                                            "with a running maximum and sum per query"),
}


def explained_by(exercise: str, test: str, codes) -> list[str]:
    """The codes among `codes` that explain a failure of `exercise`/`test`, in order."""
    return [code for code in codes if test in EXPLAINS.get((exercise, code), ((), ""))[0]]


def explanation_text(exercise: str, code: str, variant: Variant = DEFAULT) -> str:
    """What to say for `code` on `exercise`, with the variant's own numbers."""
    return EXPLAINS[(exercise, code)][1].format(
        ex1_root=root_text(variant.ex1.d_k), ex2_root=root_text(variant.ex2.d_k),
        ex2_gap=variant.ex2.gap)


def explanation(exercise: str, test: str, codes, variant: Variant = DEFAULT) -> str:
    """What the diagnoses say about this failed test ("" when none explains it, or when the
    test's own message already names the problem), with the variant's own numbers."""
    texts = [explanation_text(exercise, code, variant)
             for code in explained_by(exercise, test, codes)]
    return "; ".join(text for text in texts if text)
