"""Only the resolved plan (and the schema, and the engine's one dispatch to its pool objects)
branches on an option's kind (DESIGN.md section 1): everything else asks ``costsim.plan`` — a plan's
``owned``, ``reservation``, ``rental``, ``is_pool``, ``side``, … (``plan/options.py``) or, before
any plan exists, ``plan/facts.py`` — so what each kind means is said in one place."""

from __future__ import annotations

import shutil
from pathlib import Path

from architecture.option_kinds import violations

import costsim

PACKAGE = Path(costsim.__file__).resolve().parent

# Modules allowed to branch on kind beyond the plan, the schema and the engine's dispatch: none. A
# debt taken on is listed here and paid off; the test below fails when a listed one is paid.
KNOWN: set[str] = set()


def test_no_module_branches_on_option_kind_outside_the_plan():
    found = violations(PACKAGE)
    new = [line for line in found if line.split(":", 1)[0] not in KNOWN]
    assert not new, "\n".join(new)
    # A debt paid is taken off the list, so it cannot come back unnoticed.
    assert {line.split(":", 1)[0] for line in found} == KNOWN


def test_a_planted_branch_on_kind_is_found(tmp_path):
    copy = tmp_path / "costsim"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__", "*.yaml"))
    plants = {
        "results/advice.py": "\n\ndef _planted(plan):\n    from costsim.plan.options import OwnedPlan\n"
                             "    return isinstance(plan, (OwnedPlan, int))\n",
        "decisions/flips.py": "\n\ndef _planted(scenario):\n    return [o for o in scenario.options if o.kind in ('owned', 'x')]\n",
        "runs/budget.py": "\n\ndef _planted(pool):\n    return pool.pricing != 'spot'\n",
        "dashboard/editor_ops.py": "\n\ndef _planted(opt):\n    return opt.get('kind') == 'hybrid' or opt['pricing'] == 'reserved'\n",
        "plots/styles.py": "\n\ndef _planted(kind):\n    match kind:\n        case CloudOption():\n            return 1\n",
    }
    for name, text in plants.items():
        path = copy / name
        path.write_text(path.read_text(encoding="utf-8") + text, encoding="utf-8")
    found = "\n".join(violations(copy))
    assert "costsim/results/advice.py" in found and "isinstance with OwnedPlan" in found
    assert "costsim/decisions/flips.py" in found and "compares an option's kind" in found
    assert "costsim/runs/budget.py" in found and "compares an option's pricing" in found
    planted = [line for line in found.splitlines() if line.startswith("costsim/dashboard/editor_ops.py")]
    assert [line.split(": ", 1)[1] for line in planted] == ["compares an option's kind", "compares an option's pricing"]
    assert "costsim/plots/styles.py" in found and "a case pattern of CloudOption" in found


def test_kinds_of_other_things_and_the_allowed_modules_are_not_branches(tmp_path):
    copy = tmp_path / "costsim"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__", "*.yaml"))
    quiet = {
        "runs/outfiles.py": "\n\ndef _kinds(kind, d):\n    return kind == 'a folder' or d.kind != 'list'\n",
        "plan/options.py": "\n\ndef _own(p):\n    return isinstance(p, OwnedPlan) and p.kind == 'owned'\n",
        "engine/run.py": "\n\ndef _own(p):\n    return p.pricing == 'spot'\n",
    }
    before = set(violations(copy))
    for name, text in quiet.items():
        path = copy / name
        path.write_text(path.read_text(encoding="utf-8") + text, encoding="utf-8")
    assert set(violations(copy)) == before
