"""Lists of tests as Dagster table metadata: the UI draws a table inline (a long Markdown value hides behind a
"[Show Markdown]" link), so the tests a run is about are in plain sight on the asset's page."""

from typing import Any, Sequence

import dagster as dg

TOP_ROWS = 25


def table_of_tests(
    rows: Sequence[Sequence[Any]], header: Sequence[str], limit: int = TOP_ROWS, where: str = "`summary`"
) -> dg.TableMetadataValue:
    """The first `limit` rows as an inline table of text columns; a last row says how many more there are."""
    shown = [dict(zip(header, (" ".join(str(c).split()) for c in r))) for r in rows[:limit]]
    if len(rows) > limit:
        more = f"... and {len(rows) - limit} more (every one is in {where})"
        shown.append({header[0]: more, **{h: "" for h in header[1:]}})
    return dg.MetadataValue.table(
        records=[dg.TableRecord(r) for r in shown],
        schema=dg.TableSchema(columns=[dg.TableColumn(h, "string") for h in header]),
    )


def named(label: str, ids: Sequence[str], limit: int = 20) -> str | None:
    """'fail (14): neg_01, pos_03, ... (+2 more)': the tests a failing check is about, by name and count."""
    if not ids:
        return None
    head = f"{label} ({len(ids)}): {', '.join(ids[:limit])}"
    return head + (f" (+{len(ids) - limit} more)" if len(ids) > limit else "")
