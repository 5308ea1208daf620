"""Plotly figures from result tables, shared by the dashboard and the report (``figures.py``
gathers them; one module per kind of figure beside it)."""

from costsim.plots.capacity_plan import (
    CAPACITY_FIGURES,
    capacity_vs_demand,
    monthly_cash,
    plan_progress,
    tranche_timeline,
)
from costsim.plots.figures import (
    ALL_FIGURES,
    BOOK_VALUE_CREDIT,
    PHASE_LABELS,
    Style,
    book_value_note,
    capacity_over_time,
    cash_flow,
    class_looks,
    cost_breakdown,
    cumulative_cash,
    cumulative_cost,
    cumulative_cost_band,
    delay_distribution,
    gantt,
    hybrid_parts,
    iterations_per_day,
    lost_work,
    option_styles,
    pareto_figure,
    phase_breakdown,
    queue_over_time,
    rollout_throughput,
    time_to_target,
    tornado_figure,
    utilization_over_time,
)

__all__ = ['ALL_FIGURES', 'BOOK_VALUE_CREDIT', 'CAPACITY_FIGURES', 'PHASE_LABELS', 'Style', 'book_value_note', 'capacity_over_time', 'capacity_vs_demand', 'cash_flow', 'class_looks', 'cost_breakdown', 'cumulative_cash', 'cumulative_cost', 'cumulative_cost_band', 'delay_distribution', 'gantt', 'hybrid_parts', 'iterations_per_day', 'lost_work', 'monthly_cash', 'option_styles', 'pareto_figure', 'phase_breakdown', 'plan_progress', 'queue_over_time', 'rollout_throughput', 'time_to_target', 'tornado_figure', 'tranche_timeline', 'utilization_over_time']
