"""The dashboard (``hseval dashboard`` serves ``app/main.py``), and what its launcher tells it."""

ENV_VAR = "HSEVAL_EVAL_DIR"
"""The evaluation folder, when not given after ``--`` (``hseval dashboard`` sets both; AppTest
has no argv, so tests set this)."""
SHOWN_VAR = "HSEVAL_EVAL_DIR_AS_GIVEN"
"""The folder as the user typed it (``hseval dashboard`` sets it; the pages show it, not the
machine's absolute path)."""
