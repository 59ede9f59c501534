"""``gradcli ops``: the op table as a rich table or one JSON document (rows from
:func:`gradcli.ops.catalog.rows`)."""

from __future__ import annotations

from ..ops.catalog import rows


def run_ops(json_output: bool = False) -> int:
    data = rows()
    if json_output:
        import json

        from .._version import __version__
        print(json.dumps({"version": __version__, "functions": data}, indent=1, ensure_ascii=False))
        return 0
    from rich import box
    from rich.table import Table
    from rich.text import Text

    from .tables import _console, show
    table = Table(box=box.SIMPLE_HEAVY, pad_edge=False, title=f"{len(data)} functions", title_justify="left")
    table.add_column("signature", style="bold", overflow="fold")
    table.add_column("arity", justify="right")
    table.add_column("method / operator", overflow="fold")
    table.add_column("grad_fn", style="cyan", overflow="fold")
    table.add_column("derivative", overflow="fold")
    for r in data:
        forms = "\n".join(x for x in (r["method"], r["operator"]) if x) or "-"
        if not r["grad_fns"]:
            why = "not differentiable" if not r["differentiable"] else \
                "creates a leaf" if r["category"] == "creation" else "(no graph node)"
            table.add_row(r["signature"], str(r["arity"]), forms, "-", Text(why, style="dim"))
            continue
        for k, (grad_fn, formulas_by_input) in enumerate(r["derivatives"].items()):
            formula = "\n".join(f"{i}: {v}" for i, v in formulas_by_input.items()) or "-"
            table.add_row(r["signature"] if k == 0 else "", str(r["arity"]) if k == 0 else "", forms if k == 0 else "",
                          grad_fn, formula)
    console = _console()
    show(console, table)
    return 0
