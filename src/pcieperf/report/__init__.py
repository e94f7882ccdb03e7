"""Figures and the self-contained HTML report (`figures`): model sweeps drawn with matplotlib.

May import: every model package and measure. Nothing imports the report but the CLI.
"""
