"""Thin ipywidgets views over minislurm models, for the labs.  Built in the book issue."""
