"""The ``toolkeeper`` command line: thin commands that parse, call the library, render, exit.

Exit codes (stable, scripted against): 0 success / valid, 1 a refusal or invalid input data
(validation failed, publish refused), 2 bad input (unreadable file, malformed contract, bad flag).
"""

__all__: list[str] = []
