"""Negatives read from a report's table of measures (golden/tables.py): the parser's own cells, only tables whose
rows are measures and whose columns are periods, only rows that name a measure, each asked by a template."""

from __future__ import annotations

import datetime
import json
from collections import Counter
from dataclasses import replace

from ragpipe.golden import (
    Corpus,
    Notes,
    Table,
    cadence,
    measure_columns,
    period_rows,
    row_candidates,
    row_question,
    sentences_of,
    series_index,
    tables_of,
)


def _elements(*html: str) -> str:
    return json.dumps({"v": 2, "elements": [{"type": "Table", "metadata": {"text_as_html": h}} for h in html]})


REPORT = (
    "<table><thead><tr><th>Measure</th><th>2021/22</th><th>2022/23</th><th>Change</th></tr></thead><tbody>"
    "<tr><td>Weekly reach, Radio Aldmoor</td><td>30%</td><td>31%</td><td>+1 pt</td></tr>"  # a comma: no phrase
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
    assert [(i, p.text) for i, p in measure_columns(t)] == [(1, "2021/22"), (2, "2022/23")]  # "Change" is none
    targets = Table("r.md", ("Measure", "Target", "Q2 2021-22", "Q2 2022-23", "Status"), ())
    assert [i for i, _ in measure_columns(targets)] == [2, 3]  # a target's column before the periods
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
    assert row_question(rows[1], "2020/21") == "In 2020/21, what was the car park income?"
    assert row_question(rows[2], "2023/24") == "In 2023/24, what was the four-hour standard?"
    assert row_question(rows[1], "2020/21", named=True) == "In 2020/21, what was the Car park income?"
    assert row_candidates([t], {"r.md": [("ch_1", "another text")]}) == []  # a row no chunk holds asks nothing


def test_a_row_counting_things_something_was_done_to_asks_how_many_were() -> None:
    table = Table(
        "r.md",
        ("Measure", "2021/22", "2022/23"),
        (
            ("Noise complaints received", "4,318", "3,902"),
            ("Money saved or recovered for residents", "412", "538"),  # two verbs and a phrase: no template
            ("Complaints upheld by the ombudsman", "4", "6"),  # a phrase after the participle: none either
        ),
    )
    rows = row_candidates([table], _chunks(table))
    assert [row_question(c, "2020/21") for c in rows] == ["In 2020/21, how many noise complaints were received?"]


def test_a_capital_is_a_names_where_the_corpus_writes_it_so_inside_running_text() -> None:
    docs = {"d.md": "Fares\n\nThe 4 Fare revenue lines rose at Thornby and Kelby. The fare revenue of Thornby rose."}
    corpus = Corpus([s for d, t in docs.items() for s in sentences_of(d, d, t)], docs)
    assert corpus.written_as_name("Thornby") and not corpus.written_as_name("Fare")
    docs = {"d.md": "Archives\n\nEnquiries at the Record Office rose to a record 40."}
    corpus = Corpus([s for d, t in docs.items() for s in sentences_of(d, d, t)], docs)
    assert corpus.written_as_name("Record Office enquiries") and not corpus.written_as_name("Record loans")


def test_rows_of_kinds_are_counts_of_each_kind_and_a_table_is_asked_a_few_rows_at_most() -> None:
    kinds = Table(
        "f.md",
        ("Incident type", "2021-22", "2022-23", "Change"),
        (("Primary fires", "1,089", "1,204", "+10.6%"), ("All fires", "2,335", "2,981", "+27.7%"),
         ("Chimney fires", "84", "71", "-15.5%"), ("Road traffic collisions", "498", "512", "+2.8%"),
         ("False alarms", "3,493", "3,702", "+6.0%"), ("Fire cover costs", "\u00a31.2m", "\u00a31.3m", "+8%")),
    )  # fmt: skip
    rows = row_candidates([kinds], _chunks(kinds))
    assert [c.label for c in rows] == ["Primary fires", "Chimney fires", "Road traffic collisions"]  # "All": of all
    assert row_question(rows[0], "2020-21") == "In 2020-21, how many primary fires were there?"


def test_a_period_per_row_is_a_measure_of_the_articles_subject_asked_after_its_last_period() -> None:
    census = Table(
        "skarvoy.md",
        ("Census year", "Population", "Estimated visitors", "Notes (see text)"),
        (("1801", "412", "\u2013", ""), ("1901", "1,240", "\u2013", ""), ("2011", "2,310", "41,000", ""),
         ("2021", "2,204", "58,000", "")),
    )  # fmt: skip
    rows, columns = period_rows(census)
    assert [p.text for _, p in rows] == ["1801", "1901", "2011", "2021"] and columns == [1, 2, 3]
    asked = row_candidates([census], _chunks(census), {"skarvoy.md": "# Skarvoy"})
    assert [(c.label, c.value.text, c.qualifier.text, c.of) for c in asked] == [
        ("Population", "2,204", "2021", "Skarvoy")
    ]
    assert row_question(asked[0], "2031") == "In 2031, what was the population of Skarvoy?"
    visitors = Table("skarvoy.md", ("Year", "Estimated visitors"), (("2019", "41,000"), ("2023", "58,000")))
    (seen,) = row_candidates([visitors], _chunks(visitors), {"skarvoy.md": "Skarvoy"})  # one measure per table
    assert row_question(seen, "2024") == "In 2024, how many visitors did Skarvoy have?"
    assert row_candidates([census], _chunks(census)) == []  # no title: of what?


def test_a_row_is_answered_by_its_own_articles_figure_for_every_year_and_not_by_anothers() -> None:
    docs = {
        "press.md": "Osage Plains University Press\n\nThe press publishes around 55 new titles and 15 paperback "
        "reprints a year.",
        "zoo.md": "Aalstrup Zoo\n\nThe zoo covers 21 hectares.",
        "spa.md": "Bad Kellweiler\n\nThe Therme itself receives about 420,000 visits a year.",
    }
    corpus = Corpus([s for d, t in docs.items() for s in sentences_of(d, d, t)], docs)
    titles = {d: t.split("\n")[0] for d, t in docs.items()}
    press = Table("press.md", ("Year", "New titles"), (("2022", "52"), ("2023", "55")))
    zoo = Table("zoo.md", ("Year", "Visitors"), (("2022", "380,000"), ("2023", "412,000")))
    (titles_row,) = row_candidates([press], _chunks(press), titles)
    (visitors_row,) = row_candidates([zoo], _chunks(zoo), titles)
    (said,) = [s for s in corpus.searched if s.doc_id == "press.md"]
    assert corpus.share(titles_row.attribute, said.words) < 0.5  # "the press": most of the name is not there
    assert not corpus.search(titles_row, "2025").absent  # "around 55 new titles ... a year", in its own article
    assert corpus.search(visitors_row, "2021").absent  # another article's visits a year answer nothing


def test_a_row_is_answered_only_by_a_sentence_that_says_its_measure_and_names_the_subject_as_written() -> None:
    docs = {
        "museum.md": "Greythwaite Lead Mining Museum\n\nThe Greythwaite Lead Mining Museum opened a new gallery in "
        "2024. Visitors to the Greythwaite Lead Mining Museum can tour the mine.",
        "air.md": "Northmoor Air\n\nNorthmoor Air flew to 11 destinations in 2024.",
    }
    corpus = Corpus([s for d, t in docs.items() for s in sentences_of(d, d, t)], docs)
    titles = {d: t.split("\n")[0] for d, t in docs.items()}
    museum = Table("museum.md", ("Year", "Visitors"), (("2022", "41,300"), ("2023", "45,900")))
    (row,) = row_candidates([museum], _chunks(museum), titles)
    assert corpus.search(row, "2024").absent  # the gallery's sentence names the museum and 2024, not its visitors
    said = {**docs, "museum.md": docs["museum.md"] + " In 2024 the museum had 48,200 visitors."}
    corpus_said = Corpus([s for d, t in said.items() for s in sentences_of(d, d, t)], said)
    assert not corpus_said.search(row, "2024").absent
    assert corpus.as_written("Greythwaite Lead Mining Museum") == "the Greythwaite Lead Mining Museum"
    assert corpus.as_written("Northmoor Air") == "Northmoor Air"
    topics = {"t.md": "Tourism in Santa Irene\n\nThe island lives from tourism and fishing. Hořenov has a glassworks."}
    corpus_topics = Corpus([s for d, t in topics.items() for s in sentences_of(d, d, t)], topics)
    assert corpus_topics.topic("Tourism in Santa Irene") and not corpus_topics.topic("Hořenov Glassworks")
    resort = Table("r.md", ("Season", "Skier days"), (("2021–22", "412,000"), ("2022–23", "455,000")))
    (skiing,) = row_candidates([resort], _chunks(resort), {"r.md": "# Altenbrunn (ski resort)"})
    assert skiing.of == "Altenbrunn"  # a title's disambiguation is no part of the name
    assert "did the Greythwaite Lead Mining Museum have?" in row_question(
        replace(row, of=corpus.as_written(row.of)), "2025"
    )


def test_a_quarter_is_answered_where_its_report_sums_the_quarters_to_date() -> None:
    quarter = Table("q2.md", ("Measure", "Q2 2023/24", "Q2 2022/23"), (("Cinema admissions", "22,600", "19,300"),))
    (row,) = row_candidates([quarter], _chunks(quarter))
    summed = "Board report\n\nYear to date (1 April to 30 September)\n\nCinema admissions 40,800 36,900"
    for text, absent in ((summed, False), (summed.replace("Year to date", "Notes"), True)):
        docs = {"q2.md": text}
        corpus = Corpus([s for d, t in docs.items() for s in sentences_of("ch_2", d, t)], docs)
        assert corpus.search(row, "Q1 2023/24").absent is absent  # 40,800 less 22,600, where the text sums them


def test_a_period_that_begins_after_this_year_is_never_asked_of() -> None:
    from ragpipe.evaluate.proposing import _to_come

    year = datetime.date.today().year
    assert _to_come(str(year + 1), "periods") and _to_come(f"Q1 {year + 1}", "periods")
    assert _to_come(str(year), "periods")  # not over yet: its figures are not in
    assert not _to_come(str(year - 1), "periods") and not _to_come(f"{year}/{(year + 1) % 100:02d}", "periods")
    assert not _to_come("HR-2099", "names")


def test_a_row_that_names_money_is_money_without_a_currency_sign() -> None:
    """ "Non-pay costs | 24.3 | 24.9" under "Measure" (the £m said elsewhere) is an amount, asked "what were", never
    "how many"; a share stays a share."""
    finance = (
        "<table><thead><tr><th>Measure</th><th>2020/21</th><th>2021/22</th></tr></thead><tbody>"
        "<tr><td>Non-pay costs</td><td>24.3</td><td>24.9</td></tr>"
        "<tr><td>Online reports</td><td>41,200</td><td>48,950</td></tr>"
        "<tr><td>Pay award</td><td>2.5%</td><td>3.0%</td></tr>"
        "</tbody></table>"
    )
    (t,) = tables_of("f.md", _elements(finance))
    rows = row_candidates([t], _chunks(t))
    assert [(c.label, c.value.kind) for c in rows] == [
        ("Non-pay costs", "money"),
        ("Online reports", "count"),
        ("Pay award", "percent"),
    ]
    assert row_question(rows[0], "2019/20") == "In 2019/20, what were the non-pay costs?"


def test_a_row_is_asked_at_its_own_tables_cadence_and_never_of_a_year_its_table_states() -> None:
    """A census table of 2001, 2011 and 2021 is ten-yearly whatever another article says of "population"; a table
    whose latest years are 2020 and 2023 has no cadence; 2022, in the table's own column, is never asked."""
    from ragpipe.evaluate.proposing import _fairness, _negative

    docs = {
        "town.md": "Greyhollow\n\nThe Greyhollow mines closed in 1994. Greyhollow lies in a narrow valley.",
        "city.md": "Kelbridge\n\nThe population of Kelbridge was 41,000 in 2018 and 43,500 in 2020.",
        "paper.md": "Evening Post\n\nThe Evening Post moved to a new building in 1998.",
    }
    corpus = Corpus([s for d, t in docs.items() for s in sentences_of(d, d, t)], docs)
    titles = {d: t.split("\n")[0] for d, t in docs.items()}
    assert corpus.as_written("Greyhollow") == "Greyhollow"  # "the Greyhollow mines" is the mines'
    census = Table("town.md", ("Census", "Population"), (("2001", "7,340"), ("2011", "6,610"), ("2021", "6,184")))
    (town,) = row_candidates([census], _chunks(census), titles)
    index = series_index(corpus.searched)
    assert cadence(town, index) == 10  # not Kelbridge's 2018 and 2020
    paper = Table("paper.md", ("Year", "Circulation"), (("2015", "31,200"), ("2020", "24,900"), ("2022", "22,000"),
                                                       ("2023", "21,400")))  # fmt: skip
    (row,) = row_candidates([paper], _chunks(paper), titles)
    assert cadence(row, index) == 1
    dropped: Counter[str] = Counter()
    p = _negative(row, corpus, Notes(), {}, dropped, _fairness(row, index, ("periods",)), 1)
    assert p is not None and p.asked_for not in row.columns and p.asked_for == "2024"
