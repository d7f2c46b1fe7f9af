"""samples/make_samples.py: reruns are byte-identical, files have the real formats, planted cases exist.

These checks read the files themselves (WARC via warcio, HTML via html.parser, tar/gzip via the
standard library), so they catch a generator change that silently drops a planted case.
"""
from __future__ import annotations

import base64
import collections
import gzip
import hashlib
import html as html_lib
import io
import json
import re
import subprocess
import sys
import tarfile
from html.parser import HTMLParser
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "samples"
SHARDS = [SAMPLES / "commoncrawl" / f"CC-SAMPLE-{i:05d}.warc.gz" for i in range(3)]
WET = SAMPLES / "wet" / "CC-SAMPLE-00003.warc.wet.gz"
GENERATED_SUFFIXES = (".gz", ".tar", ".json")


def generated_files(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name.endswith(GENERATED_SUFFIXES) and "__pycache__" not in p.parts
    }


@pytest.fixture(scope="module")
def manifest() -> dict:
    return json.loads((SAMPLES / "manifest.json").read_text(encoding="utf-8"))


class ArticleText(HTMLParser):
    """Text of the <p> elements inside <article> or <div id="content"> (the pages' main content)."""

    def __init__(self) -> None:
        super().__init__()
        self.depth = 0  # >0 while inside the main container
        self.in_p = False
        self.paragraphs: list[str] = []
        self.stack: list[bool] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        is_main = tag == "article" or (tag == "div" and attrs.get("id") == "content")
        if tag in ("article", "div"):
            self.stack.append(is_main)
            self.depth += is_main
        if tag == "p" and self.depth and not attrs.get("class"):
            self.in_p = True
            self.paragraphs.append("")

    def handle_endtag(self, tag):
        if tag in ("article", "div") and self.stack:
            self.depth -= self.stack.pop()
        if tag == "p":
            self.in_p = False

    def handle_data(self, data):
        if self.in_p:
            self.paragraphs[-1] += data


def main_text(html: str) -> str:
    parser = ArticleText()
    parser.feed(html)
    return "\n".join(parser.paragraphs)


def shingles(text: str, cjk: bool) -> set:
    if cjk:
        chars = [c for c in text if c.isalnum()]
        return {"".join(chars[i : i + 5]) for i in range(max(1, len(chars) - 4))}
    words = re.findall(r"\w+", text.lower())
    return {" ".join(words[i : i + 5]) for i in range(max(1, len(words) - 4))}


def jaccard(a: set, b: set) -> float:
    return len(a & b) / len(a | b)


def charset_of(content_type: str) -> str | None:
    m = re.search(r"charset=([\w-]+)", content_type or "", re.I)
    return m.group(1).lower() if m else None


@pytest.fixture(scope="module")
def warc_pages() -> list[dict]:
    """One dict per request/response/metadata triple, in file order, for every shard."""
    pages = []
    for shard, path in enumerate(SHARDS):
        with open(path, "rb") as f:
            records = list(_records(f))
        assert records[0]["type"] == "warcinfo"
        info_id = records[0]["headers"]["WARC-Record-ID"]
        body = records[1:]
        assert len(body) % 3 == 0
        for i in range(0, len(body), 3):
            req, resp, meta = body[i : i + 3]
            assert (req["type"], resp["type"], meta["type"]) == ("request", "response", "metadata")
            pages.append({"shard": shard, "warcinfo_id": info_id, "request": req, "response": resp, "metadata": meta})
    return pages


def _records(f):
    for rec in ArchiveIterator(f):
        headers = dict(rec.rec_headers.headers)
        http = rec.http_headers
        yield {
            "type": rec.rec_type,
            "headers": headers,
            "status_line": (http.protocol + " " + http.statusline) if http else None,
            "http": dict(http.headers) if http else {},
            "payload": rec.content_stream().read(),
        }


def html_of(page: dict) -> str:
    raw = page["response"]["payload"]
    cs = charset_of(page["response"]["http"].get("Content-Type"))
    if cs is None:
        m = re.search(rb'charset="?([\w-]+)', raw[:1024])
        cs = m.group(1).decode().lower() if m else "utf-8"
    return raw.decode(cs)


# ------------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_regeneration_is_byte_identical(tmp_path):
    subprocess.run([sys.executable, str(SAMPLES / "make_samples.py"), str(tmp_path)], check=True,
                   capture_output=True, timeout=120)
    fresh, committed = generated_files(tmp_path), generated_files(SAMPLES)
    assert sorted(fresh) == sorted(committed)
    changed = [name for name in fresh if fresh[name] != committed[name]]
    assert changed == [], f"regenerated files differ from the committed ones: {changed}"


def test_gzip_members_have_zero_mtime():
    for path in [*SHARDS, WET, SAMPLES / "jsonl" / "web-0000.jsonl.gz", SAMPLES / "arxiv" / "2401.00002.gz"]:
        head = path.read_bytes()[:10]
        assert head[:2] == b"\x1f\x8b" and head[4:8] == b"\x00\x00\x00\x00", path


def test_warc_triples_are_linked_like_common_crawl(warc_pages):
    assert 40 * 3 <= len(warc_pages) <= 80 * 3
    for p in warc_pages:
        req, resp, meta = p["request"]["headers"], p["response"]["headers"], p["metadata"]["headers"]
        uri = req["WARC-Target-URI"]
        assert resp["WARC-Target-URI"] == uri == meta["WARC-Target-URI"]
        assert resp["WARC-Concurrent-To"] == req["WARC-Record-ID"]
        assert meta["WARC-Concurrent-To"] == resp["WARC-Record-ID"]
        assert req["WARC-Warcinfo-ID"] == resp["WARC-Warcinfo-ID"] == meta["WARC-Warcinfo-ID"] == p["warcinfo_id"]
        assert req["WARC-IP-Address"] == resp["WARC-IP-Address"]
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", resp["WARC-Date"])
        assert p["request"]["status_line"].startswith("GET /") and p["request"]["status_line"].endswith("HTTP/1.1")
        assert re.fullmatch(r"HTTP/1\.1 \d{3} [A-Za-z ]+", p["response"]["status_line"])
        assert resp["Content-Type"] == "application/http; msgtype=response"
        assert meta["Content-Type"] == "application/warc-fields"
        payload = p["response"]["payload"]
        digest = "sha1:" + base64.b32encode(hashlib.sha1(payload).digest()).decode()
        assert resp["WARC-Payload-Digest"] == digest
        assert int(p["response"]["http"]["Content-Length"]) == len(payload)
        assert b"fetchTimeMs: " in p["metadata"]["payload"]
    ids = [p[k]["headers"]["WARC-Record-ID"] for p in warc_pages for k in ("request", "response", "metadata")]
    assert len(ids) == len(set(ids))


def test_html_pages_declare_charset_and_language(warc_pages):
    html_pages = [p for p in warc_pages if p["response"]["status_line"].endswith("200 OK")
                  and p["response"]["http"]["Content-Type"].startswith("text/html")]
    cld2_langs, html_langs = collections.Counter(), collections.Counter()
    for p in html_pages:
        meta = p["metadata"]["payload"].decode()
        assert "charset-detected: " in meta and "languages-cld2: " in meta
        cld2 = json.loads(meta.split("languages-cld2: ", 1)[1].split("\r\n")[0])
        cld2_langs[cld2["languages"][0]["code"]] += 1
        m = re.search(r'<html lang="(\w+)"', html_of(p))
        if m:
            html_langs[m.group(1)] += 1
        assert p["response"]["headers"]["WARC-Identified-Payload-Type"] == "text/html"
    for langs in (cld2_langs, html_langs):
        assert {"en", "de", "fr", "es", "it", "pt", "nl", "ru", "pl", "zh", "ja"} <= set(langs)
    assert all(cld2_langs[lang] >= 6 for lang in ("de", "fr", "es", "it", "pt", "nl", "ru", "pl", "zh", "ja"))


def test_reader_rejects_are_present(warc_pages):
    statuses = collections.Counter(p["response"]["status_line"].split()[1] for p in warc_pages)
    assert statuses["404"] >= 1 and statuses["301"] >= 1 and statuses["302"] >= 1
    redirects = [p for p in warc_pages if p["response"]["status_line"].split()[1] in ("301", "302")]
    assert all(p["response"]["http"].get("Location", "").startswith("https://") for p in redirects)
    types = {p["response"]["http"]["Content-Type"]: p["response"]["payload"] for p in warc_pages}
    assert types["application/pdf"].startswith(b"%PDF-1.4") and types["application/pdf"].rstrip().endswith(b"%%EOF")
    assert types["image/jpeg"][:3] == b"\xff\xd8\xff"


def test_legacy_charsets(warc_pages):
    by_cs = {}
    for p in warc_pages:
        raw = p["response"]["payload"]
        header_cs = charset_of(p["response"]["http"].get("Content-Type"))
        m = re.search(rb'charset="?([\w-]+)', raw[:1024])
        meta_cs = m.group(1).decode().lower() if m else None
        if "utf-8" not in (header_cs, meta_cs) and raw.startswith((b"<!DOCTYPE", b"<html")) and (header_cs or meta_cs):
            by_cs[header_cs or meta_cs] = (header_cs, meta_cs, raw)
    header_only = by_cs["windows-1252"]
    assert header_only[1] is None  # only the HTTP header says windows-1252
    text = header_only[2].decode("windows-1252")
    assert re.search("[éèàç]", text) and b"\xc3" not in header_only[2]  # real cp1252 bytes, not UTF-8
    meta_only = by_cs["iso-8859-1"]
    assert meta_only[0] is None  # only <meta charset> says iso-8859-1
    assert re.search("[äöüß]", meta_only[2].decode("iso-8859-1"))
    cyr = by_cs["windows-1251"][2]
    assert re.search("[а-яА-Я]{5}", cyr.decode("windows-1251"))
    with pytest.raises(UnicodeDecodeError):
        cyr.decode("utf-8")


def test_exact_duplicates_across_shards(warc_pages):
    by_text = collections.defaultdict(list)
    for p in warc_pages:
        if p["response"]["status_line"].endswith("200 OK") and p["response"]["http"]["Content-Type"].startswith("text/html"):
            text = main_text(html_of(p))
            if len(text.split()) >= 50:
                by_text[text].append((p["shard"], p["response"]["headers"]["WARC-Target-URI"]))
    groups = [v for v in by_text.values() if len(v) > 1]
    cross_shard = [g for g in groups if len({s for s, _ in g}) > 1]
    assert len(groups) == 5 and len(cross_shard) == 4
    assert any(len({s for s, _ in g}) == 3 for g in groups)  # one article in all three shards
    for g in groups:
        assert len({u for _, u in g}) == len(g)  # always a different URL


def test_near_duplicates_and_unrelated_pages(warc_pages, manifest):
    case_of = {r["url"]: r for r in manifest["commoncrawl"]}
    texts = {}
    for p in warc_pages:
        url = p["response"]["headers"]["WARC-Target-URI"]
        if case_of[url]["case"] in ("good", "near_dup", "exact_dup"):
            texts[url] = (case_of[url], main_text(html_of(p)))
    near = collections.defaultdict(list)
    for row, text in texts.values():
        if row["case"] == "near_dup":
            near[row["group"]].append((row["lang"], text))
    assert len(near) == 5
    for (lang, a), (_, b) in near.values():
        assert a != b
        cjk = lang in ("zh", "ja")
        assert 0.75 <= jaccard(shingles(a, cjk), shingles(b, cjk)) < 1.0
    # unrelated good pages of one language stay far apart
    by_lang = collections.defaultdict(list)
    for row, text in texts.values():
        if row["case"] == "good" or row["expect"].startswith("keep"):
            by_lang[row["lang"]].append((row.get("group"), shingles(text, row["lang"] in ("zh", "ja"))))
    worst = 0.0
    for items in by_lang.values():
        for i in range(len(items)):
            for j in range(i + 1, len(items)):
                if items[i][0] is None or items[i][0] != items[j][0]:
                    worst = max(worst, jaccard(items[i][1], items[j][1]))
    assert worst < 0.3


def article_html(html: str) -> str:
    m = re.search(r"<article>(.*?)</article>|<div id=\"content\"[^>]*>(.*?)</div>", html, re.S)
    return (m.group(1) or m.group(2)) if m else ""


def test_good_pages_are_long_and_bad_pages_are_planted(warc_pages, manifest):
    row_of = {r["url"]: r for r in manifest["commoncrawl"]}
    html_by_case = collections.defaultdict(list)
    for p in warc_pages:
        row = row_of[p["response"]["headers"]["WARC-Target-URI"]]
        if p["response"]["http"]["Content-Type"].startswith("text/html") and p["response"]["status_line"].endswith("200 OK"):
            html_by_case[row["case"]].append((row["lang"], html_of(p)))
    for lang, html in html_by_case["good"]:
        text = main_text(html)
        if lang in ("zh", "ja"):
            assert len(text) >= 120, text
        else:
            assert len(text.split()) >= 80, text
    assert all(len(main_text(h).split()) <= 5 for _, h in html_by_case["short"])
    joined = {case: "\n".join(article_html(h) for _, h in pages) for case, pages in html_by_case.items()}
    assert "lorem ipsum" in joined["lorem_ipsum"].lower()
    assert "javascript" in joined["javascript"].lower()
    assert "{" in joined["curly_braces"] and "{" not in joined["good"]
    spam = joined["spam"].lower()
    assert spam.count("cheap") > 30 and spam.count("best price") > 10
    assert len(html_by_case["toxic"]) == 4
    toxic = joined["toxic"].lower()
    assert all(w in toxic for w in ("fuck", "shit", "idiot", "moron"))
    assert not any(w in joined["good"].lower() for w in ("fuck", "shit", "moron"))
    pii = joined["pii"]
    assert len(re.findall(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+", pii)) >= 8
    assert re.search(r"\b81\.169\.145\.92\b", pii) and re.search(r"2a02:8070:[0-9a-f:]+", pii)
    assert re.search(r"\+49 171 \d+", pii) and re.search(r"\(415\) 555-0132", pii)
    assert not re.search(r"[\w.+-]+@[\w-]+\.[a-z]{2,}", joined["good"])
    # boilerplate-heavy: lots of menu and link text around a one-line article
    for _, html in html_by_case["boilerplate_heavy"]:
        assert html.count("<li>") > 20 and len(main_text(html).split()) < 12


def test_wet_conversion_records(manifest, warc_pages):
    with open(WET, "rb") as f:
        records = list(_records(f))
    assert records[0]["type"] == "warcinfo"
    conv = records[1:]
    assert len(conv) >= 25 and all(r["type"] == "conversion" for r in conv)
    langs = collections.Counter()
    for r in conv:
        h = r["headers"]
        assert h["Content-Type"] == "text/plain" and h["WARC-Refers-To"].startswith("<urn:uuid:")
        langs[h["WARC-Identified-Content-Language"]] += 1
    assert len(langs) >= 8
    # one conversion text is a WARC page's article (headline + paragraphs), verbatim
    warc_articles = set()
    for p in warc_pages:
        if p["response"]["http"].get("Content-Type", "").startswith("text/html") and p["response"]["status_line"].endswith("200 OK"):
            html = html_of(p)
            h1 = re.search(r"<h1>(.*?)</h1>", html)
            if h1 and 'class="byline"' not in html:
                warc_articles.add(html_lib.unescape(h1.group(1)) + "\n" + main_text(html))
    wet_texts = [r["payload"].decode("utf-8") for r in conv]
    assert sum(t in warc_articles for t in wet_texts) == 1


def test_jsonl_documents(manifest):
    with gzip.open(SAMPLES / "jsonl" / "web-0000.jsonl.gz", "rt", encoding="utf-8") as f:
        docs = [json.loads(line) for line in f]
    assert 30 <= len(docs) <= 50
    assert all({"id", "url", "text"} <= set(d) for d in docs)
    assert len({d["id"] for d in docs}) == len(docs)
    counts = collections.Counter(d["text"] for d in docs)
    assert sum(1 for c in counts.values() if c > 1) == 1  # one exact duplicate inside the file
    cross = [r for r in manifest["jsonl"] if r["case"] == "exact_dup" and "WARC" in r["expect"]]
    assert len(cross) == 3
    warc_sha = {r.get("extracted_form_sha1") for r in manifest["commoncrawl"]}
    assert all(r["text_sha1"] in warc_sha for r in cross)
    assert any(d["text"] == "" for d in docs)


def test_arxiv_submissions():
    d = SAMPLES / "arxiv"
    with tarfile.open(d / "2401.00001.tar.gz") as tar:
        names = set(tar.getnames())
        main = tar.extractfile("main.tex").read().decode()
        assert tar.extractfile("._main.tex").read()[:4] == b"\x00\x05\x16\x07"
    assert {"main.tex", "sections/intro.tex", "method.tex", "main.bbl", "localmacros.sty", "figures/error.png"} <= names
    for needle in (r"\documentclass", r"\newcommand", r"\def\eps", r"\begin{document}", r"\input{sections/intro}",
                   r"\include{method}", r"\bibliography{refs}", r"\appendix", "% TODO"):
        assert needle in main
    single = gzip.decompress((d / "2401.00002.gz").read_bytes()).decode()
    assert single.startswith(r"\documentclass") and r"\begin{thebibliography}" in single
    with tarfile.open(d / "2401.00003.tar.gz") as tar:
        assert tar.getnames() == ["paper.pdf"]
    with tarfile.open(d / "arXiv_src_2401_001.tar") as bulk:
        members = {m.name: bulk.extractfile(m).read() for m in bulk.getmembers()}
    assert sorted(members) == ["2401/2401.00004.gz", "2401/2401.00005.gz", "2401/2401.00006.pdf"]
    assert gzip.decompress(members["2401/2401.00004.gz"]).startswith(rb"\documentclass")
    with tarfile.open(fileobj=io.BytesIO(members["2401/2401.00005.gz"])) as inner:
        assert "paper.tex" in inner.getnames() and "sec/results.tex" in inner.getnames()


def test_code_repositories_and_stack_rows():
    with tarfile.open(SAMPLES / "code" / "repos.tar.gz") as tar:
        files = {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}
    repos = {name.split("/")[0] for name in files}
    assert repos == {"tinykv", "webnotes", "rsgeom"}
    assert b"MIT License" in files["tinykv/LICENSE"] and b"Apache License" in files["webnotes/LICENSE"]
    exts = {Path(n).suffix for n in files}
    assert {".py", ".js", ".go", ".rs", ".c", ".java", ".sh", ".yml"} <= exts
    assert any(n.startswith("webnotes/node_modules/") for n in files)
    assert any(n.startswith("tinykv/vendor/") for n in files)
    assert "webnotes/package-lock.json" in files and "rsgeom/Cargo.lock" in files
    minified = files["webnotes/dist/app.min.js"].decode()
    assert max(len(line) for line in minified.splitlines()) > 3000
    assert b"DO NOT EDIT" in files["tinykv/api/types_gen.go"]
    assert b"\x00" in files["rsgeom/build/librsgeom.so"] and files["webnotes/assets/logo.png"][:4] == b"\x89PNG"
    table = files["rsgeom/src/sine_table.rs"].decode().splitlines()
    assert sum(map(len, table)) / len(table) > 1000
    board = files["rsgeom/data/board.txt"].decode()
    assert sum(c.isalnum() for c in board) / len(board) < 0.25
    with gzip.open(SAMPLES / "code" / "stack-0000.jsonl.gz", "rt", encoding="utf-8") as f:
        rows = [json.loads(line) for line in f]
    assert 12 <= len(rows) <= 20
    for r in rows:
        assert {"content", "max_stars_repo_path", "max_stars_repo_name", "lang", "max_stars_repo_licenses"} <= set(r)
        assert r["size"] == len(r["content"].encode())
    assert len({r["content"] for r in rows}) == len(rows) - 1  # one fork duplicate
