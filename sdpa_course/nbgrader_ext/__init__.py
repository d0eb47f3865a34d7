"""The kit's extensions to nbgrader, plugged in through its traitlets configuration."""
