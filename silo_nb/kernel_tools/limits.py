"""The caps of the kernel tools: what one call may cost the kernel and send the agent (docs/kernel-tools.md
lists them). Every tool reads them from here."""

from __future__ import annotations

__all__ = [
    "CELL_CHARS",
    "DESCRIBE_SAMPLE_ROWS",
    "FIGURE_BYTES",
    "JOURNAL_FIGURE_PIXELS",
    "MAX_CELLS",
    "MAX_CODE_CHARS",
    "MAX_COLUMNS",
    "MAX_FIGURES",
    "MAX_ROWS",
    "MAX_VARIABLES",
    "OUTPUT_CHARS",
    "REPR_CHARS",
    "TOOL_SECONDS",
    "VALUE_CHARS",
]

MAX_VARIABLES = 200  # list_variables: the first 200 by name (the count says how many there are)
OUTPUT_CHARS = 20_000  # the text of any one tool result
REPR_CHARS = 2_000  # a repr shown by inspect_variable or read_cells
VALUE_CHARS = 8_000  # run_code: the last expression's text, and each of stdout, stderr and the traceback
MAX_ROWS = 50  # inspect_variable(rows=): at most this many rows of a frame's head
MAX_COLUMNS = 30  # columns shown of a frame (dtypes, head, describe, nulls)
DESCRIBE_SAMPLE_ROWS = 100_000  # describe() of a longer frame reads its first rows only
MAX_CELLS = 20  # read_cells(last=): at most this many cells
CELL_CHARS = 2_000  # of each cell's input and output
MAX_FIGURES = 8  # run_code: figures returned as images (others are counted)
FIGURE_BYTES = 1_000_000  # one figure's PNG (rendered smaller when larger)
JOURNAL_FIGURE_PIXELS = 560  # the width of a figure as the transcript keeps it (the journal)
MAX_CODE_CHARS = 100_000  # run_code's code
TOOL_SECONDS = 10.0  # list_variables, inspect_variable, read_cells, show_figure: a __repr__ that sleeps
