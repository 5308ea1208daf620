"""Front ends (DESIGN.md section 1): the command line, the dashboard's helpers and the output folders; thin, no model logic."""
