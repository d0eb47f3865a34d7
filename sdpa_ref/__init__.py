"""sdpa_ref: the numpy reference implementation of scaled dot-product attention.

Every grade the kit gives is measured against this package.
"""
