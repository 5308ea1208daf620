"""Calibration: the published-versus-simulated validation table (``validation.py``) and workload
fitting from job records (``fit.py``, ``fit_classes.py``, ``fit_window.py``)."""
