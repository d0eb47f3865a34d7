"""The lesson's cells that grading leaves out: generated from source/sdpa/attention.py
by sdpa-course build (or: make notebooks); do not edit.

grade_id -> (tag, SHA-256 of the cell's source as released), read by
`autograder.skipping`."""

SKIPPABLE = {
    "ex1_selfcheck": (
        "self-check", "82ab8918e4f7435eb06bf0ac09833b0ee7186628702d391db9dca34396baae54"),
    "demo_score_spread": (
        "demo", "54e21c09e221605bcbf636a9350601ff24ea3d35b5371a5489a255f66ae32d44"),
    "ex2_selfcheck_softmax": (
        "self-check", "a1744739c3968786b0aec65c9a382a8c90fa65aa47f43d051c561cd0e357f43f"),
    "ex2_selfcheck_numbers": (
        "self-check", "5f9e3f097ff929077780dd563f4526bb91f53ba7f898a320bd892c93795c02c5"),
    "ex3_selfcheck_attention": (
        "self-check", "3895175f1d14b063d8c63c762c7007735ee97d706890f829cba650b471091b8b"),
    "ex3_selfcheck_causal_mask": (
        "self-check", "e8aa3619e4ab908593848a3a41964bfddcdccdeddbbd47d04c64e146964b5f96"),
    "ex3_selfcheck_checks": (
        "self-check", "a3a00ac6652efe1dd725462bc2d6be3a19361b2a534b19c7a4557362da3ceeab"),
    "ex3_verify": (
        "demo", "f1a0ebbde1b3c76d35daa9b37e10edb32fd8e5d75a47aa80611780eaf728e63d"),
    "ex3_heatmap": (
        "demo", "c07b8b16396fdb063c9b95cc2776e3e354dbd3930c7f0e4ee6f0a324a9a758b6"),
    "demo_attention_memory": (
        "demo", "0dc5300b5bcbf2765409988efcaca60f40e42852660689315369bede5ff2c586"),
    "ex4_selfcheck": (
        "self-check", "471b731fc1a1ab04b056197f6cbb25caeb7810cc47a2decf5115d1d8c2075f79"),
}
