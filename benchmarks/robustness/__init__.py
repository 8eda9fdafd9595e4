"""The aspect robustness suite (REVTGT / REVNON / ADDDIFF variants of test sets); see README.md."""
