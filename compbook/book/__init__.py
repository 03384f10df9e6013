"""The book's helpers: numbers glued into prose, figures, sliders, legibility checks, exercise checks, images."""
