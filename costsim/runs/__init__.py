"""Runs (DESIGN.md section 1): validate and simulate a scenario, its event budget and argument checks, the validation table."""
