"""Pure models (DESIGN.md section 1): plain functions over numbers and numpy arrays, no SimPy, no pandas."""
