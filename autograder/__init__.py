"""autograder: the hidden suites and the sandboxed grading engine."""
