"""The lesson's cells that grading leaves out: generated from source/sdpa/attention.py
by sdpa-course build (or: make notebooks); do not edit.

grade_id -> (tag, SHA-256 of the cell's source as released, the names it binds),
read by `autograder.skipping`."""

SKIPPABLE = {
    "ex1_selfcheck": (
        "self-check", "82ab8918e4f7435eb06bf0ac09833b0ee7186628702d391db9dca34396baae54",
        (
            "_ex1_pair", "_ex1_problems", "_ex1_short_answers",
        )),
    "demo_score_spread": (
        "demo", "54e21c09e221605bcbf636a9350601ff24ea3d35b5371a5489a255f66ae32d44",
        (
            "_show_score_spread",
        )),
    "ex2_selfcheck_softmax": (
        "self-check", "a1744739c3968786b0aec65c9a382a8c90fa65aa47f43d051c561cd0e357f43f",
        (
            "_ex2_softmax_problems",
        )),
    "ex2_selfcheck_numbers": (
        "self-check", "5f9e3f097ff929077780dd563f4526bb91f53ba7f898a320bd892c93795c02c5",
        (
            "_ex2_figure", "_ex2_near", "_ex2_number_problems", "_ex2_short",
            "_ex2_smaller_weight_slope",
        )),
    "ex3_selfcheck_attention": (
        "self-check", "3895175f1d14b063d8c63c762c7007735ee97d706890f829cba650b471091b8b",
        (
            "_ex3_attention_problems", "_ex3_call", "_ex3_large_score_problems",
            "_ex3_mask_problems",
        )),
    "ex3_selfcheck_causal_mask": (
        "self-check", "e8aa3619e4ab908593848a3a41964bfddcdccdeddbbd47d04c64e146964b5f96",
        (
            "_ex3_causal_mask_problems",
        )),
    "ex3_selfcheck_checks": (
        "self-check", "a3a00ac6652efe1dd725462bc2d6be3a19361b2a534b19c7a4557362da3ceeab",
        (
            "_EX3_BASE", "_EX3_BROKEN", "_EX3_CORRECT", "_EX3_DYADIC", "_EX3_LEAK", "_EX3_NAN",
            "_EX3_ON_AND_ABOVE_ZERO", "_EX3_ON_AND_BELOW_ZERO", "_EX3_PAST_ZERO", "_EX3_SHORT_ROW",
            "_ex3_check_problems", "_ex3_slip", "_ex3_verdict", "_ex3_weights",
        )),
    "ex3_verify": (
        "demo", "f1a0ebbde1b3c76d35daa9b37e10edb32fd8e5d75a47aa80611780eaf728e63d",
        (
            "_verify_causal_example",
        )),
    "ex3_heatmap": (
        "demo", "c07b8b16396fdb063c9b95cc2776e3e354dbd3930c7f0e4ee6f0a324a9a758b6",
        (
            "_draw_causal_attention", "plt",
        )),
    "demo_attention_memory": (
        "demo", "0dc5300b5bcbf2765409988efcaca60f40e42852660689315369bede5ff2c586",
        (
            "_show_attention_memory",
        )),
    "ex4_selfcheck": (
        "self-check", "f13a4d845c6ab79d8b80ba4c2414101c87e630c1b8bb458fa74ceb1c432f8691",
        (
            "_ex4_causal_problems", "_ex4_large_score_problems", "_ex4_lesson_problems",
            "_ex4_memory_problems", "_ex4_out", "_ex4_problems",
        )),
}
