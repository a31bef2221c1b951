"""Questions built from the parse (golden/asking.py): the phrase holding the value fronted with the verb, or asked in
place when it is the subject; None where the parse gives no question a person would read. And what makes a report's
figure a fair negative: its document's period, its clause, its cadence (golden/near_miss.py, series.py)."""

from __future__ import annotations

import pytest

from ragpipe.golden import Corpus, cadence, candidates, fair_period, question, sentences_of, series_index, siblings
from ragpipe.golden.asking import Asked, wh_question
from ragpipe.golden.clauses import said_of
from ragpipe.golden.near_miss import Candidate, Sentence, Span, passages_of, qualifiers
from ragpipe.golden.series import one_off
from ragpipe.golden.titles import document_period, document_title, named_by_year, titled_spans
from ragpipe.reading import content_words


def _ask(text: str, value: str, wh: str, qualifier: str, new: str) -> str | None:
    v, q = text.index(value), text.index(qualifier)
    return wh_question(text, Asked((v, v + len(value)), wh, (q, q + len(qualifier)), new))


def _sentence(text: str, doc: str = "d.md") -> Sentence:
    return Sentence("c0", doc, text, frozenset(content_words(text)))


def _titled(text: str, period: Span | None, sentence: Sentence | None = None) -> list[Candidate]:
    assert period is not None
    return candidates(sentence or _sentence(text), titled=titled_spans(text, period))


@pytest.mark.parametrize(
    ("text", "value", "wh", "qualifier", "new", "expected"),
    [
        (  # an object: fronted, the verb with do-support
            "The company shipped 1,184 robot arms in fiscal year 2023.",
            "1,184 robot arms", "how many robot arms", "fiscal year 2023", "fiscal year 2022",
            "How many robot arms did the company ship in fiscal year 2022?",
        ),
        (  # a copula's complement: the verb itself fronted; the first word no longer first
            "Non-revenue water for fiscal year 2023 was 16.4 percent of water produced.",
            "16.4 percent", "what percentage", "fiscal year 2023", "fiscal year 2024",
            "What percentage of water produced was non-revenue water for fiscal year 2024?",
        ),
        (  # a preposition moves with its question words
            "Passenger numbers rose by 12 percent in 2018.",
            "12 percent", "what percentage", "2018", "2017",
            "By what percentage did passenger numbers rise in 2017?",
        ),
        (  # a level ("rose to"): what the subject was
            "Operating cost per boarding rose to $8.11 in 2019, reflecting higher labour costs.",
            "$8.11", "how much", "2019", "2018",
            "What was operating cost per boarding in 2018?",
        ),
        (  # the subject: asked in place
            "About 3,100 students were enrolled at the school in 2019, up from 2,800 a decade earlier.",
            "3,100 students", "how many students", "2019", "2018",
            "How many students were enrolled at the school in 2018?",
        ),
        (  # an opening phrase stays first, with its comma
            "In 1931 the county recorded 412 permits across its eleven towns.",
            "412 permits", "how many permits", "1931", "1932",
            "In 1932, how many permits did the county record across its eleven towns?",
        ),
        (  # the period inside the value's phrase stays in the clause
            "Operating revenue reached $147.6 million in fiscal year 2022, up 4.5 percent from the previous year.",
            "$147.6 million", "how much", "fiscal year 2022", "fiscal year 2021",
            "What was operating revenue in fiscal year 2021?",
        ),
        (  # a hyphen inside a name is no break
            "The contract was awarded in February 2022 to the Caldwell-Ferris Joint Venture for $152.3 million.",
            "$152.3 million", "how much", "February 2022", "February 2021",
            "For how much was the contract awarded in February 2021 to the Caldwell-Ferris Joint Venture?",
        ),
        (  # a part named with its whole is asked with it
            "In 2022/23, UK charities contributed \u00a313.0m to research income.",
            "\u00a313.0m", "how much", "2022/23", "2023/24",
            "In 2023/24, how much did UK charities contribute to research income?",
        ),
        (  # ... or with what it is a share of
            "In 2023, exports made up 42% of sales.",
            "42%", "what percentage", "2023", "2022",
            "In 2022, what percentage of sales did exports make up?",
        ),
        (  # ... a participle after its noun included, with what it holds
            "In 2021/22, mental health accounted for 31% of days lost among officers.",
            "31%", "what percentage", "2021/22", "2020/21",
            "In 2020/21, for what percentage of days lost among officers did mental health account?",
        ),
        (  # a present perfect stays one
            "International applicants have paid 3,870 deposits for September 2023 entry.",
            "3,870 deposits", "how many deposits", "September 2023", "September 2024",
            "How many deposits have international applicants paid for September 2024 entry?",
        ),
        (  # a name whose first word the parse reads as an adjective keeps its capital
            "Bright Streets converted 1,560 lanterns in the quarter.",
            "1,560 lanterns", "how many lanterns", "the quarter", "Q4 2022/23",
            "How many lanterns did Bright Streets convert in Q4 2022/23?",
        ),
    ],
)  # fmt: skip
def test_the_phrase_holding_the_value_is_asked_as_a_person_asks_it(
    text: str, value: str, wh: str, qualifier: str, new: str, expected: str
) -> None:
    assert _ask(text, value, wh, qualifier, new) == expected


@pytest.mark.parametrize(
    ("text", "value", "qualifier"),
    [
        ("It was signed by 51 delegates in 1946.", "51 delegates", "1946"),  # a pronoun: of what?
        ("The $6.1 million project was completed in May 2022.", "$6.1 million", "May 2022"),  # inside a phrase
        ("Of these patients, 72.9% were seen within four hours in 2022.", "72.9%", "2022"),  # points back
        ("In 2022, 74.2% of patients were admitted, transferred or discharged within four hours.", "74.2%", "2022"),
        ("The recovery reached 87.9% of the first quarter of 2019.", "87.9%", "first quarter of 2019"),  # a base
        ("Excluding the storm week, the figure was 84.2% in 2022.", "84.2%", "2022"),  # the figure of what?
        ("In 2022/23, UK charities contributed \u00a313.0m.", "\u00a313.0m", "2022/23"),  # contributed to what?
        ("In 2022, other sources accounted for the remaining \u00a32.9m.", "\u00a32.9m", "2022"),  # of what?
        ("In 2023, exports made up 42%.", "42%", "2023"),  # 42% of what?
        ("In 2022, the success rate was lower, at 24%.", "24%", "2022"),  # lower than what?
        ("In 2022, the grant remained at \u00a37.42 million.", "\u00a37.42 million", "2022"),  # and the year before
        ("Among the decisions in 2023 were 14 affordable homes.", "14 affordable homes", "2023"),  # inverted
        ("Before the fire, the 2021 survey recorded 17 pairs of plover.", "17 pairs", "2021"),  # which fire?
        ("In 2023, only 78% were answered within ten working days.", "78%", "2023"),  # 78% of what?
        ("In 2023, stage 1 complaints rose by 29% to 512.", "29%", "2023"),  # the question would say 512
        ("In 2023 the station's lifeboats were launched 41 times.", "41 times", "2023"),  # which station?
        ("In 2021, children's loans did particularly well at 612,800.", "612,800", "2021"),  # "At what did ..."
        ("In 2023, Improving - Diagnostic waits fell to 14.2% over six weeks.", "14.2%", "2023"),  # a heading run in
        ("In 2023, bursaries covered up to 100% of youth fees.", "100%", "2023"),  # a limit, not a measure
        ("In 2023, the summer school ran for four weeks, with 410 places taken.", "410 places", "2023"),  # "With how"
        ("In 2023 bulky waste collections cost \u00a330 for up to three items.", "\u00a330", "2023"),  # "do ... cost"
        ("In 2023, one is switching off about 9,200 lights at night.", "9,200 lights", "2023"),  # "one", and "is"
        ("In 2023 reporters spent 400 hours on hustings.", "400 hours", "2023"),  # parsed "2023 reporters": "In, ..."
        (
            "In 2023 the \u00a31.4m unspent was mainly on two drainage schemes.",
            "\u00a31.4m",
            "2023",
        ),  # "how much unspent"
        (
            "In 2023, long-term absence, meaning absence of over four weeks, accounted for 58% of days lost.",
            "58%",
            "2023",
        ),
    ],
)
def test_no_question_where_the_parse_gives_none_a_person_would_read(text: str, value: str, qualifier: str) -> None:
    assert _ask(text, value, "what", qualifier, "2021") is None


def test_a_subject_that_holds_an_aside_gives_no_question() -> None:
    """ "excluding the wind farm" inside the subject: the question would name a wind farm it never introduced."""
    text = "Underlying commercial traffic, excluding the wind farm, rose by around 2% in 2022/23."
    assert _ask(text, "around 2%", "by what percentage", "2022/23", "2021/22") is None
    plain = "Underlying commercial traffic rose by around 2% in 2022/23."
    assert _ask(plain, "around 2%", "by what percentage", "2022/23", "2021/22") is not None
    dated = "Headcount at September 30, 2023 was 651, including the engineers who joined from Lumen."
    assert _ask(dated, "651", "how many", "September 30, 2023", "September 30, 2022") is not None  # a date's comma


def test_a_standing_rule_in_the_present_is_asked_only_of_a_period_not_yet_over() -> None:
    text = "In 2025/26, fees for international students rise by about 4% for new entrants."
    assert _ask(text, "4%", "what percentage", "2025/26", "2087/88") == (
        "In 2087/88, by what percentage do fees for international students rise for new entrants?"
    )
    assert _ask(text, "4%", "what percentage", "2025/26", "2021/22") is None  # "do ... rise in 2021/22?"
    hours = "In 2023/24, the 163,900 hours lost at hospitals are equivalent to about 13,700 ambulance shifts."
    assert _ask(hours, "163,900 hours", "how many hours", "2023/24", "2021/22") is None  # a subject in the present too


def test_a_qualifier_of_another_clause_is_not_said_of_the_value() -> None:
    text = "By the time the school closed in July 1945, more than 2,100 pilots had received their training there."
    v, q = text.index("2,100 pilots"), text.index("July 1945")
    assert not said_of(text, (v, v + 12), (q, q + 9))
    assert candidates(_sentence(text)) == []
    same = "More than 2,100 pilots received their training there in 1944."
    v, q = same.index("2,100 pilots"), same.index("1944")
    assert said_of(same, (v, v + 12), (q, q + 4))


def test_a_documents_title_names_the_period_of_its_unqualified_figures() -> None:
    assert document_period("Ridership Report: January\u2013March 2023").text == "first quarter of 2023"  # type: ignore[union-attr]
    assert document_period("Quarterly Bulletin \u2014 Third Quarter 2022 (July\u2013September)").text == (  # type: ignore[union-attr]
        "third quarter of 2022"
    )
    assert document_period("Annual Report 2021/22").text == "2021/22"  # type: ignore[union-attr]
    assert document_period("Summary of Minutes \u2014 Regular Meeting of 15 March 2023") is None  # the date it was held
    assert document_period("Ridership Report: February\u2013May 2023") is None  # no quarter
    period = document_period("Quarterly Performance Report \u2014 Q1 2022/23 (April to June 2022)")
    (said,) = _titled("The emergency department saw 38,910 attendances in the quarter.", period)
    assert question(said, "Q2 2022/23") == "How many attendances did the emergency department see in Q2 2022/23?"
    (unsaid,) = _titled("Bed occupancy in general and acute beds averaged 93.1%.", period)
    assert question(unsaid, "Q2 2022/23") == "In Q2 2022/23, what was bed occupancy in general and acute beds?"
    assert _titled("A year earlier the four-hour figure for all patients was 76.9%.", period) == []
    quarter = document_period("Performance Bulletin: Fourth Quarter 2023")
    (c,) = _titled("AMT hired 41 trainee operators during the quarter, more than planned.", quarter)
    assert (
        question(c, "first quarter of 2024")
        == "How many trainee operators did AMT hire during the first quarter of 2024?"
    )


def test_a_year_ended_on_a_day_is_its_financial_year_and_a_heading_under_an_organisations_name_is_read() -> None:
    text = "Fenmoor Learning Trust\n\nTrustees' Annual Report for the year ended 31 August 2022\n\nIn 2021-22 ..."
    title = document_title(text)
    assert title == "Fenmoor Learning Trust: Trustees' Annual Report for the year ended 31 August 2022"
    assert document_period(title, text).text == "2021-22"  # type: ignore[union-attr]  # written as the text writes it
    assert document_period("Annual report for the year to 31 March 2023").text == "2022/23"  # type: ignore[union-attr]
    assert document_period("Accounts for the year ended 31 December 2022").text == "2022"  # type: ignore[union-attr]
    article = "Aalstrup Zoo\n\nAalstrup Zoo is a zoological garden founded in 1934."
    assert document_title(article) == "Aalstrup Zoo"  # a paragraph under the title is no heading
    docs = {"trust.md": text, "term.md": "Autumn Term 2022 Report\n\nPupils on roll rose to 4,069 in the term."}
    corpus = Corpus([s for d, t in docs.items() for s in sentences_of(d, d, t)], docs)
    assert corpus.periods["trust.md"].text == "2021-22" and corpus.titled("trust.md") is None  # read, not asked
    assert corpus.periods["term.md"].text == "2022" and corpus.titled("term.md") is None  # a term is no year
    period = document_period("Annual Report 2022/23")
    (c,) = _titled("Energy costs almost doubled, to \u00a31.14m, even after government relief.", period)
    assert question(c, "2021/22") == "In 2021/22, what were energy costs?"  # a level: what they were
    joined = (
        "The first \u00a31.62 million of the grant was received during the year and development work is well under way."
    )
    assert _titled(joined, period) == []  # not "How much ... was received during 2021/22 and development work?"


def test_a_quarterly_reports_figures_answer_only_its_own_quarter_and_tables_are_searched() -> None:
    docs = {
        "q1.md": "Quarterly Report \u2014 Q1 2023\n\nThe agency delivered 68,900 trips during the quarter.",
        "q4.md": "Quarterly Report \u2014 Q4 2023\n\nThe agency delivered 70,100 trips during the quarter.\n\n"
        "Measure Q4 2023 Q3 2023 Trips delivered 70,100 69,300",
    }
    sentences = [s for d, t in docs.items() for s in sentences_of(d, d, t)]
    passages = [s for d, t in docs.items() for s in passages_of(d, d, t)]
    corpus = Corpus(sentences, docs, passages)
    trap = next(s for s in sentences if s.doc_id == "q1.md" and "68,900" in s.text)
    (c,) = _titled(trap.text, corpus.periods["q1.md"], trap)
    assert corpus.search(c, "Q2 2023").absent  # q4.md's sentences are its own quarter's
    answered = corpus.search(c, "Q3 2023")
    assert not answered.absent and "69,300" in answered.answered_by[1]  # type: ignore[index]  # the table row
    assert not Corpus(sentences, docs).search(c, "Q3 2023").answered_by  # without the table: not found


def test_a_series_of_years_is_asked_at_its_cadence() -> None:
    census = "The census of 1891 counted 9,760 residents in the town."
    others = [
        "The census of 1871 counted 6,100 residents in the town.",
        "The census of 1881 counted 8,200 residents.",
        "A special census of 1874 counted 7,000 residents after the floods.",  # a stray year: the step holds
    ]
    sentences = [_sentence(t) for t in (census, *others)]
    (c,) = candidates(sentences[0])
    index = series_index(sentences)
    assert fair_period(c, index).startswith("a series") and cadence(c, index) == 10
    assert siblings(c.qualifier, {}, cadence(c, index))[:2] == ["1881", "1901"]


def test_one_off_acts_and_days_of_events_are_no_series() -> None:
    for text in (
        "An air raid on the night of 14 October 1944 destroyed about 60% of the main building.",
        "The construction contract was awarded in February 2021 to Caldwell-Ferris for $212 million.",
        "In 2022-23 the Tenancy Sustainment Fund was increased to \u00a3250,000.",  # a decision about a named fund
        "In 1998 the company moved its headquarters to Leeds.",  # where an act was done
        "In 2023, the trust received \u00a3310,000 from insurers for the fire.",  # the clause names an event
    ):
        (c,) = candidates(_sentence(text))
        assert one_off(c), text
    (c,) = candidates(_sentence("Reservoir storage stood at 87 percent of capacity at March 31, 2023."))
    assert not one_off(c)  # a balance at a day is a period's
    for text in (
        "In 2022-23 the average weekly rent was increased to \u00a3104.20.",  # a measure, not a named thing
        "In 2023 \u00a314,250 in surcharges was paid into the Fund.",  # the amount is the subject: a sum paid
    ):
        (c,) = candidates(_sentence(text))
        assert not one_off(c), text


def test_a_financial_year_is_one_period_and_a_duration_bound_no_value() -> None:
    assert [q.text for q in qualifiers("In 2022/23 the trust spent more.")] == ["2022/23"]
    assert [q.text for q in qualifiers("Attendances in Q3 2021/22 rose.")] == ["Q3 2021/22"]
    assert qualifiers("between 2019-21 and later") == []  # a range of years
    (q,) = qualifiers("In 2022/23 the trust spent more.")
    assert siblings(q, {})[:2] == ["2021/22", "2023/24"]
    assert candidates(_sentence("In 2022, twelve patients had been waiting over 78 weeks for treatment.")) == []


def test_an_events_figure_and_a_period_of_a_fronted_phrase_are_no_series() -> None:
    (c,) = candidates(_sentence("A breach of the embankment at Lenn Bottom in February 1954 drained 3 miles of canal."))
    assert one_off(c)  # the subject is an event: it happened once
    fronted = "At the start of the pandemic in March 2020 the airline cut its schedule by 85% for the summer."
    assert candidates(_sentence(fronted)) == []  # the month dates the pandemic, not the cut
    (c,) = candidates(_sentence("Polonia was relegated from the country's top flight in 2013 because of debts."))
    assert c.qualifier.text == "2013"  # after the verb, a period attached to a noun is still the statement's
    (c,) = candidates(_sentence("The headcount was 702 employees at June 30, 2024, the highest in its history."))
    assert question(c, "June 30, 2025") == "What was the headcount at June 30, 2025?"


def test_a_negative_from_an_article_names_what_the_article_is_about() -> None:
    from collections import Counter

    from ragpipe.evaluate.proposing import UNNAMED, _negative
    from ragpipe.golden import Notes

    def proposed(article: str) -> list[str]:
        files = {"festival.md": article}
        sentences = [s for d, t in files.items() for s in sentences_of(d, d, t)]
        corpus = Corpus(sentences, files)
        dropped: Counter[str] = Counter()
        out = [
            p.question
            for s in sentences
            for c in candidates(s)
            if (p := _negative(c, corpus, Notes(), {}, dropped, ("periods", "a series")))
        ]
        return out + [UNNAMED] * dropped[UNNAMED]

    title = "# Tarsova International Film Festival\n\n"
    assert proposed(title + "The 2023 edition screened 176 films over ten days in October.") == [UNNAMED]
    named = proposed(title + "The 2023 festival screened 176 films over ten days in October.")
    assert named == ["How many films did the 2022 festival screen over ten days in October?"]


def test_a_period_named_by_where_it_stands_is_searched_as_the_period_it_names() -> None:
    docs = {
        "update.md": "Council Update, Summer 2023\n\nInternational applicants have paid 3,870 deposits for September "
        "2023 entry, compared with 3,240 at the same time last year.",
        "q3.md": "Quarterly Report \u2014 Q3 2023\n\nRiverside recorded 124,300 visits during the quarter, against "
        "101,600 in Q2 last year.",
    }
    sentences = [s for d, t in docs.items() for s in sentences_of(d, d, t)]
    corpus = Corpus(sentences, docs)
    assert [corpus.year_before(s) for s in sentences] == ["September 2022", "Q2 2022"]
    (deposits,) = candidates(sentences[0])
    assert not corpus.search(deposits, "September 2022").absent  # "at the same time last year"
    assert corpus.search(deposits, "September 2024").absent
    (visits,) = _titled(sentences[1].text, corpus.periods["q3.md"], sentences[1])
    assert not corpus.search(visits, "Q2 2022").absent
    assert corpus.search(visits, "Q3 2022").absent  # a year before, but another quarter


def test_a_capital_that_only_opened_its_sentence_is_lowered_in_the_question() -> None:
    docs = {
        "m.md": "Monthly Statistics\n\nBerth occupancy averaged 73% in May 2023. Average berth occupancy at the "
        "terminal rose to 64% in 2021. Dredging at Berth N5 began in June. Riverside recorded 61,900 visits. The "
        "riverside path reopened.",
    }
    corpus = Corpus([s for d, t in docs.items() for s in sentences_of(d, d, t)], docs)
    assert corpus.common_case("In May 2022, what was Berth occupancy?") == "In May 2022, what was berth occupancy?"
    assert corpus.common_case("How many visits did Riverside record?") == "How many visits did Riverside record?"
    assert corpus.common_case("When did dredging at Berth N5 begin?") == "When did dredging at Berth N5 begin?"


def test_a_figure_stated_for_every_year_answers_each_year() -> None:
    docs = {
        "press.md": "Osage Plains Press\n\nThe press published 55 titles in 2023, a record for the house. The press "
        "publishes about 55 titles a year, most of them in history.",
        "zoo.md": "Aalstrup Zoo\n\nThe zoo received 412,000 visitors in 2023, a record. The zoo opened a new hall.",
    }
    sentences = [s for d, t in docs.items() for s in sentences_of(d, d, t)]
    corpus = Corpus(sentences, docs)
    press = next(c for s in sentences if s.doc_id == "press.md" for c in candidates(s))
    assert not corpus.search(press, "2021").absent  # "about 55 titles a year"
    zoo = next(c for s in sentences if s.doc_id == "zoo.md" for c in candidates(s))
    assert corpus.search(zoo, "2021").absent


def test_a_level_stated_by_its_change_answers_the_year_before() -> None:
    """ "narrowed from 8.4% to 7.6%" in the 2022 report gives 2021's level: a question of 2021 is answered. A sentence
    that names the period it changed from is read by that period, not by its document's."""
    docs = {
        "ar-2022.md": "Annual Report 2022\n\nOur median gender pay gap narrowed from 8.4% to 7.6%.",
        "ar-2023.md": "Annual Report 2023\n\nIn 2023, the median gender pay gap was 6.1% across all staff.",
        "results.md": "Results 2023\n\nRevenue rose from $40.1 million in 2022 to $48.7 million.",
    }
    sentences = [s for d, t in docs.items() for s in sentences_of(d, d, t)]
    corpus = Corpus(sentences, docs)
    changed, stated, named = sentences
    assert corpus.year_before(changed) == "2021"
    assert corpus.year_before(named) == ""
    (gap,) = candidates(stated)
    assert not corpus.search(gap, "2021").absent
    assert corpus.search(gap, "2020").absent
    up = {"ar.md": "Annual Report 2022\n\nThe service reached 38,400 subscribers at 31 March 2022, up from 31,100."}
    (reached,) = [s for d, t in up.items() for s in sentences_of(d, d, t)]
    assert Corpus([reached], up).year_before(reached) == "31 March 2021"  # "up from": the level a year before


def test_a_title_that_names_a_one_off_by_its_year_is_no_period_of_its_figures() -> None:
    assert named_by_year("Saule Navigation and Drainage Act 1891")
    assert named_by_year("Great Saule Flood of 1887")
    assert not named_by_year("Annual Report 2022")
    assert not named_by_year("Weirlight Festival 2024")  # an edition recurs
    docs = {
        "act.md": "Saule Navigation and Drainage Act 1891\n\nThe act contained 96 sections arranged in six parts.",
        "report.md": "Annual Report 2022\n\nThe board met 11 times and approved 96 grants.",
    }
    corpus = Corpus([s for d, t in docs.items() for s in sentences_of(d, d, t)], docs)
    assert corpus.titled("act.md") is None
    assert corpus.titled("report.md") is not None
