"""The memoised chunk tokenizer must give exactly datatrove's English words."""
from __future__ import annotations

import pytest
from datatrove.utils.text import split_into_words

from stages.quality.word_tokenizer import ALPHA, IS_PUNCT, NON_SYMBOL, PUNCT_CHAR, ChunkTokenizer

CASES = [
    "",
    "word",
    "Don't you think it's U.S.-made? I can't; they'd've said so!!",
    "Visit https://example.com/a?b=1&c=2 or mail me at a.b@c.org :) :-( <3",
    "well-known 10km $100 1,000.50 5'11\" (parenthesised) [bracketed] {curly}",
    "tabs\tand\nnew\r\nlines\xa0nbsp\u2003em-space",
    "Ellipsis... and … and ...... done.",
    "Mixed: Москва, 北京市是中国的首都。 und Äpfel. ¿Qué? ¡Sí!",
    "#hashtag @mention C++ e.g. etc. Mr. Smith a.m. p.m.",
    "--- *** ### ... !!! ???",
    "word. Word. USA. C. wont. didnt, id? etc. e.g. dont! cannot. gonna, a. b, Mr. ñandú. straße! İstanbul. ǅx.",
    "Москва. 北京. Ωmega? x1. x, , . .. a.b. a,b",
    # special cases spaCy matches over the token sequence; learnt together they must not interact
    "hi:) so'' (x): (= ok:* '' :) ): x: )x '' 'x' :-) (: =) :( ;) <3 </3 ^_^ :P :-P xD",
]


@pytest.fixture(scope="module")
def tok():
    return ChunkTokenizer()


@pytest.mark.parametrize("text", CASES)
def test_words_match_datatrove(tok, text):
    ours = [w for toks, _ in tok.chunks(text.split()) for w in toks]
    assert ours == split_into_words(text)


def test_fast_paths_match_spacy(tok):
    import spacy

    nlp = spacy.blank("en")
    chunks = "word. Word. USA. wont. didnt, id? etc. dont! cannot. gonna, a. b, z. ñandú. straße! ǆx. x: y; Im. im.".split()
    for c in chunks:
        assert tok.chunks([c])[0][0] == tuple(t.text for t in nlp.tokenizer(c)), c


def test_flags(tok):
    (toks, flags), = tok.chunks(["(ok)."])
    assert toks == ("(", "ok", ")", ".")
    assert flags[1] & NON_SYMBOL and flags[1] & ALPHA and not flags[1] & IS_PUNCT
    assert flags[0] & IS_PUNCT and not flags[0] & PUNCT_CHAR
    assert flags[3] & PUNCT_CHAR and flags[3] & IS_PUNCT


def test_memo_is_bounded_and_still_correct():
    tok = ChunkTokenizer(max_memo=3)
    text = "one two three four five six seven, eight."
    ours = [w for toks, _ in tok.chunks(text.split()) for w in toks]
    assert ours == split_into_words(text)
    assert len(tok._tokens) <= len(set(text.split()))
    again = [w for toks, _ in tok.chunks("nine ten".split()) for w in toks]
    assert again == ["nine", "ten"] and len(tok._tokens) <= 3


def test_counts_of_long_documents_do_not_carry(tok):
    """Past 2**21 characters the packed per-chunk counts could carry into each other: the counts
    are then taken from the flags, and must equal the short path's on the same words."""
    from stages.quality.word_tokenizer import _SHORT

    chunks = ["word", "(x)", "--", "...", "#", "ab1"] * 1000
    short = tok.words(chunks, 100)
    long = tok.words(chunks, _SHORT)
    assert short == long and short[1] == (3000, 8000, 3000)  # word, x, ab1 per group
    huge = "." * (_SHORT + 5) + "a"  # one chunk; spaCy splits it into "...." runs and "a"
    words, counts = tok.words([huge], len(huge))
    assert counts[0] == sum(1 for w in words if any(c.isalnum() for c in w))


# A final "." after letters that are lowercase to Python but not in spaCy's lowercase class
# (Georgian, Armenian) stays attached in spaCy; the plain-word fast path used to split it.
DOT_CASES = ["აღემატება. ეს არის ტექსტი.", "Հայերեն. բառ.", "USA. usa. Ab. ÀB. ǅx. ß. ﬁ.", "Ⴀა. ꙁꙁ. ᏸᏸ."]


@pytest.mark.parametrize("text", DOT_CASES)
def test_final_dot_only_where_spacy_splits_it(text):
    from stages.quality.text_stats import DocStats
    st = DocStats(text, ChunkTokenizer())
    assert st.words == split_into_words(text)


# spaCy's special-case matcher runs over a whole document's tokens: a match across one space
# (`'` + `'`, no rule) wins over an overlapping match inside a chunk (`''`) and undoes it.
WHOLE_CASES = ["test x'' ''word", "foo '' (''bar", "x '' ('' ok", "it 's (it's) x'' ''y and x'' ''",
               "plain text with no special case at all, (ok) ''"]


@pytest.mark.parametrize("text", WHOLE_CASES)
def test_matches_across_chunks_as_spacy_on_the_whole_text(text):
    from datatrove.utils.text import split_into_sentences

    from stages.quality.c4 import count_sentences
    from stages.quality.text_stats import DocStats
    tok = ChunkTokenizer()
    st = DocStats(text, tok)
    assert st.words == split_into_words(text)
    assert count_sentences(text, tok, st.needs_whole) == len(split_into_sentences(text))


def test_cross_chunk_match_is_detected():
    tok = ChunkTokenizer()
    text = "test x'' ''word"
    assert tok.words(text.split(), len(text))[0] != split_into_words(text)  # chunk by chunk differs
    assert tok.needs_whole(text.split())
    assert not tok.needs_whole("plain words only".split())


def test_a_long_text_is_tokenized_in_pieces_exactly_as_spacy_on_the_whole(monkeypatch):
    """spaCy sees a long text a piece at a time (its Doc was 96x the text); the cuts
    keep out of the special-case matcher's reach, so the tokens are spaCy's on the whole text."""
    import random

    import stages.quality.word_tokenizer as wt
    from stages.quality.text_stats import DocStats

    tok = ChunkTokenizer()
    rnd = random.Random(5)
    special = ["x''", "''x", "``''", "''", "(''", "'s", "cannot", "dont", "a.", ":)", "(:", "=)", "'em", "U.S."]
    plain = ["word", "other", "Hello,", "there.", "end!", "3.5", "x-y", "foo's", "(bar)"]
    seps = [" ", " ", " ", "\n", "  ", "\n\n", " \n"]
    for trial in range(60):
        parts = []
        for _ in range(rnd.randint(50, 400)):
            parts += [rnd.choice(special if rnd.random() < 0.15 else plain), rnd.choice(seps)]
        text = "".join(parts).strip()
        tok.learn(text.split())
        size = rnd.randint(20, 200)
        pieces = list(tok.pieces(text, size))
        assert " ".join(pieces).split() == text.split()
        spacy_words = [t.text for t in tok._tokenizer(text) if t.text.strip()]
        assert [t.text for p in pieces for t in tok._tokenizer(p) if t.text.strip()] == spacy_words
        flags = [0 if not t.text.strip() else tok._token_flags.get(t.text) for t in tok._tokenizer(text)]
        monkeypatch.setattr(wt, "SLICE", size)
        monkeypatch.setattr(wt, "_SMALL_SLICE", max(10, size // 4))
        assert [f for f in tok.whole_flags(text)] == [f if f is not None else tok._token_flags[t.text]
                                                       for f, t in zip(flags, tok._tokenizer(text))]
        st = DocStats(text, tok)
        assert st.words == split_into_words(text)
        if st.needs_whole:
            assert len(pieces) > 1
        monkeypatch.undo()


def test_a_short_run_of_quote_chunks_is_never_cut_inside():
    """A piece holding chunks spaCy's matcher changes is tokenized by spaCy in sub-pieces of
    `_SMALL_SLICE` characters, cut only where no such chunk is in reach. Found on a Wikipedia talk
    comment ending in quote runs: past the first sub-piece no cut was safe, and cutting anyway (as
    the outer pieces do, to bound memory) split a quote run and changed its tokens."""
    import stages.quality.word_tokenizer as wt
    from stages.quality.text_stats import DocStats

    tok = ChunkTokenizer()
    tail = " '''''<>''''' '''''''''',Nothing really. You?'''''<>''''' '''''''''',0,0.1305"
    for k in range(wt._SMALL_SLICE - 120, wt._SMALL_SLICE + 20, 7):
        text = ("Yeah me too. " * 40)[:k] + tail
        st = DocStats(text, tok)
        assert st.words == split_into_words(text), k


def test_a_long_chunk_the_matcher_changed_does_not_widen_every_cut_window():
    """Hostile input: a chunk the matcher changes may be long (5,000 letters between quotes), and it
    stays in the memo for every later text. Each cut candidate's window reached that far, so a text
    full of candidates near such chunks cost time quadratic in its length (a 700 KB text: 227 s
    where 1.3 s is normal). The long chunk is now found by its place in the text; the words are
    still spaCy's of the whole text, and the text each candidate looks at stays short."""
    class CountingSet(set):
        looked = 0

        def isdisjoint(self, chunks):
            chunks = list(chunks)
            CountingSet.looked += sum(map(len, chunks))
            return super().isdisjoint(chunks)

    tok = ChunkTokenizer()
    long = "''" + "b" * 5000 + "''"
    text = "x''" + " y" * 300 + " " + long + " z''" + " w" * 300 + "\n" + " ".join(["q''"] * 3000) + " end."
    tok.learn([long])
    assert long in tok._matched and len(long) > 64
    tok._matched = CountingSet(tok._matched)
    words, _ = tok.whole_words(text)
    assert words == [t.text for t in tok._tokenizer(text) if t.text.strip()]
    assert CountingSet.looked < 30 * len(text)  # was ~900x: every candidate's window was 10,000 characters


def test_the_memo_is_bounded_in_characters_too(monkeypatch):
    """Hostile input: documents that each hold a distinct long chunk (a base64 blob) filled the memo
    with all of them, its number of chunks far under the bound; it now starts again past MEMO_CHARS
    characters of chunks (all of one document's chunks stay, as with the count bound)."""
    import stages.quality.word_tokenizer as wt

    monkeypatch.setattr(wt, "MEMO_CHARS", 1000)
    tok = ChunkTokenizer()
    for i in range(40):
        text = f"Some words, then a blob {chr(97 + i % 26) * 300}{i} and (more) words."
        assert tok.words(text.split(), len(text))[0] == split_into_words(text)
        assert tok._chars == sum(map(len, tok._tokens)) <= 1000
    big = "x" * 5000 + " y"
    assert tok.words(big.split(), len(big))[0] == ["x" * 5000, "y"] and tok._chars == 5001


@pytest.mark.parametrize("bound", ["count", "chars"])
def test_a_memo_restart_inside_a_long_text_keeps_the_chunks_the_matcher_changed(monkeypatch, bound):
    """A text over SEGMENT is learned a segment at a time; when the memo started again while a later
    segment was learned, it also forgot which chunks of the earlier ones the matcher changed, and the
    whole text was then cut and tokenised as if none were ("''" where spaCy gives "'", "'"). Those
    chunks now outlive the memo's restarts (MATCHED_CHARS bounds them)."""
    import stages.quality.text_stats as ts
    import stages.quality.word_tokenizer as wt
    from stages.quality.text_stats import DocStats

    monkeypatch.setattr(ts, "SEGMENT", 150)
    monkeypatch.setattr(ts.segments, "__defaults__", (150,))
    if bound == "chars":
        monkeypatch.setattr(wt, "MEMO_CHARS", 600)
    tok = ChunkTokenizer(max_memo=120) if bound == "count" else ChunkTokenizer()
    DocStats(" ".join(f"p{i}yy" for i in range(40)), tok).words  # an earlier document fills the memo
    text = "Yeah me too. x'' ''x and more words here to fill the segment up to size. " * 2
    text += " " + " ".join(f"w{i}x" for i in range(300))
    st = DocStats(text, tok)
    assert st.words == split_into_words(text) and st.needs_whole


def test_the_changed_chunks_are_bounded_on_their_own(monkeypatch):
    import stages.quality.word_tokenizer as wt

    monkeypatch.setattr(wt, "MATCHED_CHARS", 8)
    tok = ChunkTokenizer()
    tok.learn(["x''", "''y", "z''", "plain"])
    assert tok._matched == {"x''", "''y", "z''"} and tok._matched_chars == 9
    tok.clear()
    assert not tok._matched and tok._matched_chars == 0
    tok.learn(["x''"])
    tok.clear()
    assert tok._matched == {"x''"}  # under the bound: kept across the memo's restart
