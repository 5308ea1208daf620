"""Words and number formats every front end shares: the one formatter (``formats.py``), what the
CLI, the dashboard and the report say first (``headline.py``), and the words of the numbers the
layers above return: the verdict (``verdict.py``, its clauses in ``wording.py``, time to a target
in ``to_target.py``), the tornado (``tornado.py``), ``optimize`` (``optimize.py``), a workload fit
(``fit.py``), an imported record's shape (``trace_shape.py``) and the assumptions table
(``assumptions.py``). No I/O."""
