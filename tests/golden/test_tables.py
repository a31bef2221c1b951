"""Negatives read from a report's table of measures (golden/tables.py): the parser's own cells, only tables whose
rows are measures and whose columns are periods, only rows that name a measure, each asked by a template."""

from __future__ import annotations

import json

from ragpipe.golden import Corpus, Table, measure_columns, row_candidates, row_question, sentences_of, tables_of


def _elements(*html: str) -> str:
    return json.dumps({"v": 2, "elements": [{"type": "Table", "metadata": {"text_as_html": h}} for h in html]})


REPORT = (
    "<table><thead><tr><th>Measure</th><th>2021/22</th><th>2022/23</th><th>Change</th></tr></thead><tbody>"
    "<tr><td>Emergency attendances</td><td>141,250</td><td>149,830</td><td>+6.1%</td></tr>"
    "<tr><td>Car park income</td><td>\u00a31.61m</td><td>\u00a31.84m</td><td>+14%</td></tr>"
    "<tr><td>Four-hour standard</td><td>74.2%</td><td>68.9%</td><td>\u22125.3 pts</td></tr>"
    "<tr><td>Planning applications decided</td><td>655</td><td>612</td><td>\u22126.6%</td></tr>"
    "<tr><td>Visits to our visitor centres</td><td>316,800</td><td>352,200</td><td>+11%</td></tr>"
    "<tr><td>Peatland restored (hectares)</td><td>352</td><td>386</td><td>+10%</td></tr>"
    "<tr><td>Tractors</td><td>\u00a31,362</td><td>\u00a31,118</td><td>+22%</td></tr>"
    "</tbody></table>"
)


def _chunks(table: Table) -> dict[str, list[tuple[str, str]]]:
    return {table.doc_id: [("ch_1", "Key figures\n\n" + " ".join(" ".join(r) for r in (table.header, *table.rows)))]}


def test_a_table_is_read_from_the_parsers_cells_with_its_empty_cells() -> None:
    (t,) = tables_of("r.md", _elements("<table><tr><th/><th>2022</th><th>2023</th></tr><tr><td>Net sales</td>"
                                       "<td>$3,021 million</td><td>$3,412 million</td></tr></table>"))  # fmt: skip
    assert t.header == ("", "2022", "2023") and t.rows == (("Net sales", "$3,021 million", "$3,412 million"),)
    assert tables_of("r.md", "not json") == [] and tables_of("r.md", json.dumps({"elements": []})) == []


def test_only_a_table_of_measures_by_period_has_period_columns() -> None:
    (t,) = tables_of("r.md", _elements(REPORT))
    assert [p.text for p in measure_columns(t)] == ["2021/22", "2022/23"]  # "Change" is no period
    places = Table("r.md", ("Visitor centre", "2022-23", "2023-24"), (("Thornby", "184,300", "179,600"),))
    assert measure_columns(places) == []  # a row per place: the measure is not in the row
    noted = Table("r.md", ("Indicator", "2021 (baseline)", "2022"), (("Scope 1 emissions", "31,600", "30,900"),))
    assert measure_columns(noted) == []  # a column that is more than a period


def test_rows_that_name_a_measure_are_asked_by_a_template() -> None:
    (t,) = tables_of("r.md", _elements(REPORT))
    rows = row_candidates([t], _chunks(t))
    assert [c.label for c in rows] == ["Emergency attendances", "Car park income", "Four-hour standard"]
    first = rows[0]
    assert first.sentence.text == "Emergency attendances 141,250 149,830 +6.1%" and first.sentence.chunk_id == "ch_1"
    assert (first.value.text, first.qualifier.text, first.columns) == ("141,250", "2021/22", ("2021/22", "2022/23"))
    assert [c.value.kind for c in rows] == ["count", "money", "percent"]
    assert row_question(first, "2020/21") == "In 2020/21, how many emergency attendances were there?"
    assert row_question(rows[1], "2020/21") == "In 2020/21, what was car park income?"
    assert row_question(rows[2], "2023/24") == "In 2023/24, what was four-hour standard?"
    assert row_question(rows[1], "2020/21", named=True) == "In 2020/21, what was Car park income?"
    assert row_candidates([t], {"r.md": [("ch_1", "another text")]}) == []  # a row no chunk holds asks nothing


def test_a_capital_is_a_names_where_the_corpus_writes_it_so_inside_running_text() -> None:
    docs = {"d.md": "Fares\n\nThe 4 Fare revenue lines rose at Thornby and Kelby. The fare revenue of Thornby rose."}
    corpus = Corpus([s for d, t in docs.items() for s in sentences_of(d, d, t)], docs)
    assert corpus.written_as_name("Thornby") and not corpus.written_as_name("Fare")
